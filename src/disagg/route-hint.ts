import type { RouteInfo } from '../routing';

/**
 * The body for a server whose pick chose a data-parallel rank (see docs/protocol.md
 * "Centralized KV router"): `disaggregated_params.route_hint` set to it. A body without
 * disaggregated_params (aggregated serving, a skipped context phase) gets
 * `request_type: context_and_generation` with the hint. Without a hint the text is unchanged,
 * so other policies pay nothing; each attempt of a retry takes its own pick's hint.
 */
export function bodyForRoute(text: string, info: RouteInfo): string {
  const hint = info.routeHint;
  if (!hint) return text;
  const body = JSON.parse(text) as Record<string, unknown>;
  const params = body.disaggregated_params;
  body.disaggregated_params = typeof params === 'object' && params !== null && !Array.isArray(params)
    ? { ...params, route_hint: hint }
    : { request_type: 'context_and_generation', route_hint: hint };
  return JSON.stringify(body);
}
