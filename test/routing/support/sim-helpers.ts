import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { RouterRegistry, type Router } from '../../../src/routing';
import { ServerRegistry, type ServerState } from '../../../src/servers';
import type { SimWorker } from '../../../src/simulator';

export function routerOf(app: NestFastifyApplication, role: 'context' | 'generation' = 'generation'): Router {
  return app.get(RouterRegistry).router(role);
}

export function stateOf(app: NestFastifyApplication, role: 'context' | 'generation', url: string): ServerState {
  const s = app.get(ServerRegistry).findByUrl(role, url);
  if (!s) throw new Error(`no ${role} server ${url}`);
  return s;
}

/** Requests of each type a simulated worker answered. */
export function served(w: SimWorker): { plain: number; context_only: number; generation_only: number } {
  const t = w.stats.requests.byType;
  return { plain: t.plain ?? 0, context_only: t.context_only ?? 0, generation_only: t.generation_only ?? 0 };
}

export function totalServed(w: SimWorker): number {
  const s = served(w);
  return s.plain + s.context_only + s.generation_only;
}

/** Every server idle and every router reservation released. */
export function allIdle(app: NestFastifyApplication): boolean {
  const registry = app.get(ServerRegistry);
  const managers = app.get(RouterRegistry);
  return registry.list().every((s) => s.activeRequests === 0 && s.activeTokens === 0)
    && (['context', 'generation'] as const).every((r) => managers.router(r).snapshot().in_flight === 0);
}

/** Whether a server's block table (as the router knows it) holds the first `blocks` of a chain. */
export function holdsPrefix(state: ServerState, chain: readonly bigint[], blocks = chain.length): boolean {
  return state.kvTable().matchPrefix(chain.slice(0, blocks)) === Math.min(blocks, chain.length);
}

/** Whether the worker's own KV events (not the router's routed-block records) put the chain in the table. */
export function confirmsPrefix(state: ServerState, chain: readonly (bigint | string)[], algo?: string): boolean {
  const table = state.kvTable(algo);
  const confirmed = new Set(table.keys());
  return chain.every((h) => confirmed.has(h));
}
