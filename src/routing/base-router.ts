import type { ServerRole } from '../config';
import type { ServerState } from '../servers';
import type {
  FinishRequestOptions,
  GetNextServerOptions,
  RouteInfo,
  RouteResult,
  Router,
  RouterSnapshot,
  RoutingRequest,
} from './router.interface';
import { NoServerAvailableError } from './routing.errors';

export interface RouterInit<A> {
  policy: string;
  role: ServerRole;
  args: A;
}

interface Reservation {
  server: ServerState;
  tokens: number;
}

/**
 * Server-set bookkeeping and per-request load accounting shared by the policies. Load lives
 * on the ServerState, so a policy switched at runtime sees the load of requests the previous
 * policy started, and both return it to zero as those requests finish.
 */
export abstract class BaseRouter<A extends Readonly<Record<string, unknown>> = Record<string, unknown>> implements Router {
  policy = '';
  role: ServerRole = 'generation';
  args = {} as A;
  private serverList: ServerState[] = [];
  private readonly reservations = new Map<string, Reservation>();

  init(init: RouterInit<A>): void {
    this.policy = init.policy;
    this.role = init.role;
    this.args = init.args;
    this.onInit();
  }

  /** Hook for policies that start background work or derive state from their args. */
  protected onInit(): void {}

  /** Awaited once after init, before the router serves: binds what must be bound; throwing refuses to start. */
  async start(): Promise<void> {}

  get servers(): readonly ServerState[] {
    return this.serverList;
  }

  abstract getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult>;

  addServer(server: ServerState): void {
    if (this.serverList.includes(server)) return;
    this.serverList = [...this.serverList, server];
    this.onServerAdded(server);
  }

  removeServer(server: ServerState): void {
    if (!this.serverList.includes(server)) return;
    this.serverList = this.serverList.filter((s) => s !== server);
    this.onServerRemoved(server);
  }

  onServersUpdated(servers: readonly ServerState[]): void {
    for (const s of this.serverList) if (!servers.includes(s)) this.removeServer(s);
    for (const s of servers) this.addServer(s);
  }

  protected onServerAdded(_server: ServerState): void {}
  protected onServerRemoved(_server: ServerState): void {}

  /**
   * Not an async function: one suspended on afterFinish's promise (a KV poll) would keep the
   * request, and the prompt it holds, alive until that promise settles, long enough for it to
   * outlive the young generation, where a finished request's bytes are cheapest to collect.
   */
  finishRequest(request: RoutingRequest, options: FinishRequestOptions = {}): Promise<void> {
    const reservation = this.reservations.get(request.id);
    if (!reservation) return Promise.resolve();
    this.reservations.delete(request.id);
    reservation.server.activeRequests -= 1;
    reservation.server.activeTokens -= reservation.tokens;
    try {
      return this.afterFinish(request, reservation.server, options.success ?? true);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Runs after load was released (e.g. fetch KV events); must not throw for upstream faults. */
  protected async afterFinish(_request: RoutingRequest, _server: ServerState, _success: boolean): Promise<void> {}

  /** Servers eligible for this request, in rotation order. Throws when none is left. */
  protected candidates(options: GetNextServerOptions = {}): readonly ServerState[] {
    const excluded = excludedUrls(options);
    const list = excluded.length
      ? this.serverList.filter((s) => !excluded.includes(s.url))
      : this.serverList;
    if (list.length === 0) throw new NoServerAvailableError(this.role, excluded);
    return list;
  }

  /** Records the choice and counts its load until finishRequest. */
  protected reserve(request: RoutingRequest, server: ServerState, tokens = 0, info: RouteInfo = {}): RouteResult {
    const previous = this.reservations.get(request.id);
    if (previous) {
      // A second pick for the same request without a finish: release the first one.
      previous.server.activeRequests -= 1;
      previous.server.activeTokens -= previous.tokens;
    }
    this.reservations.set(request.id, { server, tokens });
    server.activeRequests += 1;
    server.activeTokens += tokens;
    if (request.untokenized !== undefined) info.untokenized = request.untokenized;
    return { server, info };
  }

  get inFlight(): number {
    return this.reservations.size;
  }

  snapshot(): RouterSnapshot {
    return {
      policy: this.policy,
      role: this.role,
      args: this.args,
      in_flight: this.reservations.size,
      servers: this.serverList.map((s) => ({
        id: s.id,
        url: s.url,
        active_requests: s.activeRequests,
        active_tokens: s.activeTokens,
        kv_blocks_known: s.kvBlocksKnown,
      })),
      ...this.extraSnapshot(),
    };
  }

  protected extraSnapshot(): Record<string, unknown> {
    return {};
  }

  async close(): Promise<void> {}
}

export function excludedUrls(options: GetNextServerOptions): readonly string[] {
  const ex = options.excludeServer;
  if (ex === undefined) return [];
  return typeof ex === 'string' ? [ex] : ex;
}
