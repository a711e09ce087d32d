import { isIP } from 'node:net';
import type { AppConfig } from './config.schema';

/** localhost, 127.0.0.0/8 and ::1 (bracketed or not): addresses no other machine reaches. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1' || h === '0:0:0:0:0:0:0:1';
}

/** The host an http(s) cluster_uri names; undefined for etcd or an unparsable uri. */
export function httpClusterUriHost(uri: string): string | undefined {
  if (!/^https?:\/\//i.test(uri)) return undefined;
  try {
    return new URL(uri).hostname;
  } catch {
    return undefined;
  }
}

/**
 * Why the cluster storage this router would serve must not start: without `api_key`, anyone
 * who reaches it can register a worker and be sent prompts, so (as the newest TensorRT-LLM
 * requires) both the listener and the uri the workers use must be loopback, unless
 * `allow_unauthenticated` says the network is trusted. See README "Self-registering workers".
 */
export function clusterStorageScopeProblem(config: AppConfig): string | undefined {
  const cluster = config.disagg_cluster;
  if (!cluster) return undefined;
  const uriHost = httpClusterUriHost(cluster.cluster_uri);
  if (uriHost === undefined || cluster.api_key !== undefined || cluster.allow_unauthenticated) return undefined;
  const listener = cluster.storage_listener?.host ?? config.hostname;
  const where = cluster.storage_listener ? 'disagg_cluster.storage_listener.host' : 'hostname';
  if (!isLoopbackHost(listener)) {
    return `disagg_cluster: the cluster storage would be served without credentials on ${listener} (${where}), which is not loopback: set disagg_cluster.api_key (or DISAGG_CLUSTER_API_KEY), serve it on a loopback disagg_cluster.storage_listener, or set disagg_cluster.allow_unauthenticated: true on a trusted network`;
  }
  if (!isLoopbackHost(uriHost)) {
    return `disagg_cluster.cluster_uri: ${cluster.cluster_uri} is not loopback, but the cluster storage takes no credentials: set disagg_cluster.api_key (or DISAGG_CLUSTER_API_KEY), or disagg_cluster.allow_unauthenticated: true on a trusted network`;
  }
  return undefined;
}
