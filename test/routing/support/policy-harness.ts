import { DEFAULT_HTTP_SESSION_OPTIONS, HttpSessionProvider } from '../../../src/http-session';
import type { BaseRouter } from '../../../src/routing';
import type { RequestKind, RoutingRequest } from '../../../src/routing';
import { blockHashChain, KvEventApplier, KvEventPoller, KvWorkers, POLL_EVERY_WORKER, PUBLISH_NOWHERE, type BlockKey } from '../../../src/kv-cache';
import { ServerState } from '../../../src/servers';
import { WorkerClient } from '../../../src/worker-client';

/** A session that is never opened: policies under unit test must not need the network. */
export function closedSession(): HttpSessionProvider {
  return new HttpSessionProvider(DEFAULT_HTTP_SESSION_OPTIONS);
}

/**
 * The KV room wired by hand, as KvCacheModule wires it (policies under unit test are built
 * without Nest): attach states to `workers` for the events polled over `session` to reach them.
 */
export function kvRoom(session = closedSession()): { workers: KvWorkers; poller: KvEventPoller } {
  const workers = new KvWorkers();
  return { workers, poller: new KvEventPoller(new WorkerClient(session), new KvEventApplier(workers), POLL_EVERY_WORKER, PUBLISH_NOWHERE) };
}

let nextPort = 9100;
/** States of distinct (never contacted) servers. */
export function servers(n: number, role: 'context' | 'generation' = 'generation'): ServerState[] {
  return Array.from({ length: n }, () => new ServerState({ url: `http://127.0.0.1:${nextPort++}`, role, source: 'config' }));
}

export function makeRouter<R extends BaseRouter>(router: R, policy: string, args: Record<string, unknown>, list: ServerState[], role: 'context' | 'generation' = 'generation'): R {
  router.init({ policy, role, args });
  router.onServersUpdated(list);
  return router;
}

let nextId = 0;
export function request(body: Record<string, unknown>, kind: RequestKind = 'completion'): RoutingRequest {
  return { id: `req-${++nextId}`, kind, body };
}

/** Token ids 1000.. of a given length (distinct streams with different `base`). */
export function tokens(length: number, base = 1000): number[] {
  return Array.from({ length }, (_, i) => base + i);
}

/** Marks the leading blocks of a prompt as cached on a server, as its events would. */
export function cacheBlocks(server: ServerState, ids: number[], tokensPerBlock: number, blocks?: number): BlockKey[] {
  const chain = blockHashChain(ids, tokensPerBlock).slice(0, blocks);
  const table = server.kvTable();
  for (const h of chain) table.add(h);
  return chain;
}

export function urls(list: readonly ServerState[]): string[] {
  return list.map((s) => s.url);
}
