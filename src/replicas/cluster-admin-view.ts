export const CLUSTER_ADMIN_VIEW = Symbol('CLUSTER_ADMIN_VIEW');

/** What GET /admin/v1/cluster shows: replicas, worker owners, bus state and lag. */
export interface ClusterAdminView {
  detail(): Record<string, unknown>;
}

/** A single router (no `cluster` section). */
export const singleRouterView: ClusterAdminView = {
  detail: () => ({ enabled: false }),
};
