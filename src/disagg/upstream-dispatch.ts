import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { Dispatcher } from 'undici';
import { AdmissionService } from '../admission/admission.service';
import { APP_CONFIG, trtllmEnv, type AppConfig, type ServerRole } from '../config';
import { classifyTransportError, clientSafeCode, HttpSessionClosedError, type TextParts } from '../http-session';
import { NoServerAvailableError, RouterRegistry, type RouteResult, type Router } from '../routing';
import { AnswerTooLargeError, answerLimitFor, readAnswerText } from './answer-body';
import { WorkerBody } from './worker-body';
import { JSON_BODY, type WorkerBodyEncoder } from './worker-body-encoder';
import { WorkerBodyEncodings } from './worker-body-encodings';
import { WorkerCall } from './worker-call';
import { RequestEvents, type UpstreamFailureEvent } from '../request-events';
import type { Flow, Reservation } from './request-flow';
import { bodyForRoute } from './route-hint';
import { SameServerRetry } from './same-server-retry';
import { ClientGoneError, HttpApiError, type UpstreamFailureKind } from '../common';

/**
 * What one attempt of a call sends: its body, written in the encoding of the server it goes to
 * (JSON text or msgpack, see WorkerBodyEncodings), and headers signed for that body. The
 * signatures cover field values, not bytes (docs/protocol.md "Signed handoff"), so they hold
 * for either encoding and for the JSON an `auto` fallback resends.
 */
export interface Attempt {
  body: WorkerBody;
  headers: Record<string, string> | undefined;
}

/**
 * The attempts of a call, by number (0 is the first): a body naming a disagg_request_id gets
 * a fresh one on every retry, and its signatures with it. A WorkerBody: every attempt sends it.
 */
export type Attempts = WorkerBody | ((attempt: number) => Attempt);

/** A call that got an answer head: the server's reservation, its answer, and how large it may grow. */
export interface Dispatched extends Reservation {
  res: Dispatcher.ResponseData;
  /** Largest answer body accepted (limits.max_answer_bytes or sized from the request). */
  limit: number;
  /** The answer, when send() had to read it already (see WorkerCall). */
  answerText?: string;
}

/**
 * The calls to the workers: picks a server through the role's router, sends, retries, and
 * keeps the finish ledger (every router that handed out a server gets its finishRequest
 * exactly once, on every path). Failures become upstream-failure events and OpenAI errors.
 */
@Injectable()
export class UpstreamDispatch {
  private readonly logger = new Logger(UpstreamDispatch.name);
  private readonly onFinishError = (err: Error): void => {
    this.logger.error(`finishRequest failed: ${err.message}`);
  };
  /** TRTLLM_DISAGG_NO_RETRY=1 turns retries off, as in TensorRT-LLM. */
  private readonly maxRetries: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly call: WorkerCall,
    private readonly routers: RouterRegistry,
    private readonly events: RequestEvents,
    private readonly encodings: WorkerBodyEncodings,
    @Optional() private readonly admission?: AdmissionService,
  ) {
    this.maxRetries = trtllmEnv().noRetry ? 0 : config.max_retries;
  }

  /**
   * A server of the role's pool, reserved until finish(). The token ids (or the reason there
   * are none) the pick computed feed the request's next pick and its bodies.
   */
  async pick(flow: Flow, role: ServerRole, excluded: readonly string[]): Promise<Reservation> {
    if (flow.channel.abort.aborted) throw new ClientGoneError();
    const router = this.routers.router(role);
    return { router, route: this.picked(flow, router, role, await this.pickRoute(flow, router, role, excluded)) };
  }

  /**
   * Sends to the reserved server, retrying connection failures and 5xx answers on another
   * server (the failed ones excluded) up to max_retries, or on the same one after a backoff
   * when no other is left (TRTLLM_DISAGG_NO_RETRY=1: no retries). Every attempt sends what
   * `attempts` gives for it, in its server's encoding; an `auto` fallback to JSON resends that
   * same attempt (see WorkerCall). Nothing has reached the client yet, so a retry is always safe
   * here. 4xx answers are returned as they are. A 500 counts against its server only once
   * another server answered the same request (see reportFailures).
   */
  async send(
    flow: Flow,
    role: ServerRole,
    first: Reservation,
    attempts: Attempts,
    /** Owned by this call: failed servers are added to it. */
    excluded: string[],
    timeoutMs: number,
    stream: boolean,
  ): Promise<Dispatched> {
    const failures: string[] = [];
    let lastFailed: string | undefined;
    let sameServer: SameServerRetry | undefined;
    let unproven: UpstreamFailureEvent[] | undefined;
    const baseHeaders = stream ? (flow.streamHeaders ??= { ...flow.headers, accept: 'text/event-stream' }) : flow.headers;
    for (let attempt = 0; attempt <= this.maxRetries; attempt++) {
      if (flow.channel.abort.aborted) throw new ClientGoneError();
      let held = first;
      if (attempt > 0) {
        const next = await this.pickAgain(flow, role, excluded, lastFailed, (sameServer ??= new SameServerRetry()));
        if (!next) break;
        held = next;
        flow.done.retries += 1;
        this.events.emit('retry', { role, requestId: flow.channel.requestId });
      }
      const { router, route } = held;
      const server = route.server;
      const sent = attempts instanceof WorkerBody ? undefined : attempts(attempt);
      const body = sent ? sent.body : (attempts as WorkerBody);
      const headers = sent?.headers ? { ...baseHeaders, ...sent.headers } : baseHeaders;
      const encoder = this.encodings.encoderFor(server);
      // This pick's data-parallel rank, if it chose one: each attempt carries its own.
      const routed = bodyForRoute(body, route.info);
      const payload = this.encode(flow, held, encoder, routed);
      const limit = answerLimitFor(this.config.limits.max_answer_bytes, payload.length, flow.routing.body);
      flow.upstreamRole = role;
      flow.upstreamUrl = server.url;
      flow.trace?.callStarted(role, server.url, attempt, headers);
      try {
        const json = (): string | Uint8Array | TextParts => this.encode(flow, held, JSON_BODY, routed);
        const { res, answerText } = await this.call.post(flow, server, headers, { encoder, payload, json, limit }, timeoutMs, stream);
        const status = res.statusCode;
        if (status === 200 || (status >= 400 && status < 500)) {
          if (unproven) this.reportFailures(unproven, status === 200 ? 'status_5xx' : 'status_500');
          return { router, route, res, limit, answerText };
        }
        res.body.dump().catch(() => undefined);
        this.finish(flow, router, false);
        if (status < 500) {
          // A redirect or another 1xx-3xx answer: the router follows none, and relays no empty answer.
          this.badResponse(flow, role, route, `an unexpected HTTP ${status} answer`);
        }
        const event: UpstreamFailureEvent = { requestId: flow.channel.requestId, role, server, kind: 'status_5xx', detail: `HTTP ${status}` };
        if (status === 500) (unproven ??= []).push(event);
        else this.events.emit('upstreamFailure', event);
        failures.push(`${server.url} answered ${status}`);
      } catch (err) {
        if (err instanceof HttpApiError) throw err;
        this.finish(flow, router, false);
        if (err instanceof HttpSessionClosedError) throw new HttpApiError(503, 'the router is shutting down', { code: 'shutting_down' });
        if (flow.channel.abort.aborted) throw new ClientGoneError();
        const kind = classifyTransportError(err);
        this.events.emit('upstreamFailure', { requestId: flow.channel.requestId, role, server, kind, detail: (err as Error).message });
        if (kind === 'timeout') {
          if (unproven) this.reportFailures(unproven, 'status_500');
          flow.done.errorKind = 'timeout';
          throw new HttpApiError(504, `${role} server ${server.url} did not answer within ${timeoutMs / 1000} s`, { code: 'upstream_timeout' });
        }
        failures.push(`${server.url}: ${clientSafeCode(err, kind)}`);
      }
      excluded.push(server.url);
      lastFailed = server.url;
    }
    if (unproven) this.reportFailures(unproven, 'status_500');
    flow.done.errorKind = 'upstream_failed';
    throw new HttpApiError(502, `${role} server failed after ${failures.length} attempt(s): ${failures.join('; ')}`, { code: 'upstream_error' });
  }

  /** A non-streamed answer whole, within its size limit; transport failures become 502/504. */
  async readAnswer(flow: Flow, role: ServerRole, call: Dispatched): Promise<string> {
    if (call.answerText !== undefined) return call.answerText;
    try {
      return await readAnswerText(call.res, call.limit);
    } catch (err) {
      this.finish(flow, call.router, false);
      if (err instanceof AnswerTooLargeError) this.badResponse(flow, role, call.route, `an answer larger than the limit of ${call.limit} bytes`, 'answer_too_large');
      throw this.transportError(flow, role, call.route, err);
    }
  }

  /**
   * The body in the encoding of the reservation's server. One the router cannot write is the
   * client's fault (400), never a failure of the server: its reservation ends as a success.
   */
  encode(flow: Flow, held: Reservation, encoder: WorkerBodyEncoder, body: WorkerBody): string | Uint8Array | TextParts {
    try {
      return encoder.encode(body);
    } catch (err) {
      this.finish(flow, held.router, true);
      throw err;
    }
  }

  /** finishRequest once per router reservation; its KV polling runs off the request path. */
  finish(flow: Flow, router: Router, success: boolean): void {
    const i = flow.pending.indexOf(router);
    if (i < 0) return;
    flow.pending.splice(i, 1);
    this.admission?.leavePool(router.role);
    router.finishRequest(flow.routing, { success }).catch(this.onFinishError);
  }

  finishAll(flow: Flow, success: boolean): void {
    for (const router of [...flow.pending]) this.finish(flow, router, success);
  }

  badResponse(flow: Flow, role: ServerRole, route: RouteResult, what: string, code = 'bad_upstream_response'): never {
    this.events.emit('upstreamFailure', { requestId: flow.channel.requestId, role, server: route.server, kind: 'bad_response', detail: what });
    flow.done.errorKind = 'bad_response';
    throw new HttpApiError(502, `${role} server ${route.server.url} sent ${what}`, { code });
  }

  /** A failure of an answer under way: the client's leaving, or a 502/504 naming the server. */
  transportError(flow: Flow, role: ServerRole, route: RouteResult, err: unknown): Error {
    if (flow.channel.abort.aborted) return new ClientGoneError();
    const kind = classifyTransportError(err);
    flow.done.errorKind = kind;
    this.events.emit('upstreamFailure', { requestId: flow.channel.requestId, role, server: route.server, kind, detail: (err as Error).message });
    const url = route.server.url;
    if (kind === 'timeout') return new HttpApiError(504, `${role} server ${url} timed out`, { code: 'upstream_timeout' });
    return new HttpApiError(502, `${role} server ${url} failed mid-answer (${kind})`, { code: 'upstream_error' });
  }

  /** The pick of a retry: another server, or the failed one after a backoff when none is left. */
  private async pickAgain(flow: Flow, role: ServerRole, excluded: string[], lastFailed: string | undefined, sameServer: SameServerRetry): Promise<Reservation | undefined> {
    const router = this.routers.router(role);
    try {
      return { router, route: this.picked(flow, router, role, await this.pickRoute(flow, router, role, excluded)) };
    } catch (err) {
      if (!(err instanceof NoServerAvailableError)) throw err;
    }
    if (!(await sameServer.readmit(excluded, lastFailed, flow.channel.abort))) {
      if (flow.channel.abort.aborted) throw new ClientGoneError();
      return undefined;
    }
    try {
      return { router, route: this.picked(flow, router, role, await this.pickRoute(flow, router, role, excluded)) };
    } catch (again) {
      if (again instanceof NoServerAvailableError) return undefined;
      throw again;
    }
  }

  /**
   * 500 answers held back by send(): `status_5xx` (counted against the server) once another
   * server answered the same request, `status_500` (not counted: the request itself may be
   * what failed) when none did.
   */
  private reportFailures(events: UpstreamFailureEvent[], kind: UpstreamFailureKind): void {
    for (const e of events) {
      e.kind = kind;
      this.events.emit('upstreamFailure', e);
    }
  }

  /** The router's pick; its promise as it is when no per-pool limit applies (one await less). */
  private pickRoute(flow: Flow, router: Router, role: ServerRole, excluded: readonly string[]): Promise<RouteResult> {
    flow.trace?.routingStarted(role);
    if (!this.admission?.poolLimited(role)) {
      flow.pickStarted = performance.now();
      return router.getNextServer(flow.routing, { excludeServer: excluded });
    }
    return this.pickInPoolSlot(flow, router, role, excluded);
  }

  /** A per-pool slot is held with the reservation and released in finish(). */
  private async pickInPoolSlot(flow: Flow, router: Router, role: ServerRole, excluded: readonly string[]): Promise<RouteResult> {
    await this.admission!.enterPool(role, flow.channel.abort.signal);
    try {
      // The wait for a pool slot is admission's, not the policy's.
      flow.pickStarted = performance.now();
      return await router.getNextServer(flow.routing, { excludeServer: excluded });
    } catch (err) {
      this.admission!.leavePool(role);
      throw err;
    }
  }

  /** Records a reservation, to be finished exactly once; what the pick computed feeds the next one. */
  private picked(flow: Flow, router: Router, role: ServerRole, route: RouteResult): RouteResult {
    flow.pending.push(router);
    flow.trace?.routed(role, router.policy, route);
    const info = route.info;
    if (info.tokenIds) flow.routing.tokenIds = info.tokenIds;
    if (info.untokenized !== undefined) flow.routing.untokenized = info.untokenized;
    if (info.blockChains) flow.routing.blockChains = info.blockChains;
    const routingSeconds = (performance.now() - flow.pickStarted) / 1000;
    this.events.emit('routed', { role, server: route.server, policy: router.policy, matchedTokens: info.matchedTokens, promptTokens: info.promptTokens, untokenized: info.untokenized, routingSeconds });
    return route;
  }
}
