import type { RouteInfo } from '../routing';
import type { WorkerBody } from './worker-body';

type Body = Record<string, unknown>;

/**
 * The body for a server whose pick chose a data-parallel rank (see docs/protocol.md
 * "Centralized KV router"): `disaggregated_params.route_hint` set to it. A body without
 * disaggregated_params (aggregated serving, a skipped context phase) gets
 * `request_type: context_and_generation` with the hint. Without a hint the body is the same
 * one, so other policies pay nothing; each attempt of a retry takes its own pick's hint.
 */
export function bodyForRoute(body: WorkerBody, info: RouteInfo): WorkerBody {
  const hint = info.routeHint;
  if (!hint) return body;
  return body.map((b: Body) => {
    const params = b.disaggregated_params;
    const disaggregated_params = typeof params === 'object' && params !== null && !Array.isArray(params)
      ? { ...params, route_hint: hint }
      : { request_type: 'context_and_generation', route_hint: hint };
    return { ...b, disaggregated_params };
  });
}
