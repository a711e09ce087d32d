import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { Dispatcher } from 'undici';
import { AdmissionService } from '../admission/admission.service';
import { APP_CONFIG, type AppConfig, type ServerRole } from '../config';
import { HttpSessionClosedError, HttpSessionProvider } from '../http-session';
import { RequestTracing, type RequestTrace } from '../observability/tracing';
import { NoServerAvailableError, RouterRegistry, type RequestKind, type RouteResult, type Router, type RoutingRequest } from '../routing';
import { ServerRegistry } from '../servers';
import type { ClientChannel } from './client-channel';
import { defaultNodeId, nextDisaggRequestId } from './disagg-request-id';
import { channelWithOwnAbort, generationFirstBodies } from './generation-first';
import { SameServerRetry } from './same-server-retry';
import { SseUsageRewriter } from './sse-usage-rewriter';
import { AnswerTooLargeError, answerLimitFor, readAnswerText } from './answer-body';
import { checkContextAnswer } from './context-answer';
import { RequestDeadline } from './request-deadline';
import { serializeRequest } from './serialize';
import { workerErrorBody } from './worker-error';
import { contextUsageOf, rewriteUsage, type ContextUsage } from './usage';
import { HttpApiError, ClientGoneError, type UpstreamFailureKind } from '../common';
import { RequestEvents, type RequestDoneEvent, type RequestTimings, type UpstreamFailureEvent } from '../request-events';
import { classifyTransportError, clientSafeCode } from '../http-session';
import { INFERENCE_PATH } from '../common';


interface Routed {
  router: Router;
  route: RouteResult;
  res: Dispatcher.ResponseData;
  /** Largest answer body accepted (limits.max_answer_bytes or sized from the request). */
  limit: number;
}

interface Flow {
  routing: RoutingRequest;
  kind: RequestKind;
  channel: ClientChannel;
  started: number;
  timings: RequestTimings;
  /** Filled in as the flow goes and emitted as it is at the end (one object per request). */
  done: RequestDoneEvent;
  /** Upstream request headers, the same for every call of this request but the accept. */
  headers: Record<string, string>;
  streamHeaders: Record<string, string> | undefined;
  /** Routers that reserved a server for this request, finished exactly once each. */
  pending: Router[];
  /** timeouts.request_s for the whole request (and the first event of a stream). */
  deadline: RequestDeadline;
  /** The server the request last went to (two fields: no object per call), named when a deadline passes. */
  upstreamRole: ServerRole | undefined;
  upstreamUrl: string | undefined;
  /** Spans of this request; undefined while tracing is off. */
  trace: RequestTrace | undefined;
}

/**
 * The disaggregated request flow of trtllm-serve (context_first): a context_only call on the
 * context pool, then a generation_only call on the generation pool, whose answer streams to
 * the client. Every router that handed out a server gets its finishRequest, on every path.
 */
@Injectable()
export class DisaggService {
  private readonly logger = new Logger(DisaggService.name);
  private readonly nodeId: number;
  private readonly onFinishError = (err: Error): void => {
    this.logger.error(`finishRequest failed: ${err.message}`);
  };

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly session: HttpSessionProvider,
    private readonly routers: RouterRegistry,
    private readonly servers: ServerRegistry,
    private readonly events: RequestEvents,
    @Optional() private readonly admission?: AdmissionService,
    @Optional() private readonly tracing?: RequestTracing,
  ) {
    this.nodeId = config.node_id ?? defaultNodeId();
  }

  /** Aggregated when the cluster has no context pool (see ServerRegistry.hasContextPool). */
  get aggregated(): boolean {
    return !this.servers.hasContextPool();
  }

  async handle(kind: RequestKind, body: Record<string, unknown>, channel: ClientChannel, headers?: RoutingRequest['headers']): Promise<void> {
    const disaggId = nextDisaggRequestId(this.nodeId);
    // Every field present from the start: one object shape per request, no spreads at the end.
    const timings: RequestTimings = { contextStart: undefined, contextEnd: undefined, generationStart: undefined, firstByte: undefined, end: 0 };
    const stream = body.stream === true;
    const flow: Flow = {
      routing: { id: String(disaggId), kind, body, headers },
      kind,
      channel,
      started: performance.now(),
      timings,
      done: {
        requestId: channel.requestId, kind, stream, status: 0, mode: 'disagg', retries: 0,
        contextServer: undefined, generationServer: undefined, errorKind: undefined, ctxRequestId: undefined, timings, startedAt: 0,
      },
      headers: { 'content-type': 'application/json', 'x-request-id': channel.requestId },
      streamHeaders: undefined,
      pending: [],
      deadline: new RequestDeadline(channel.abort, this.config.timeouts.request_s * 1000),
      upstreamRole: undefined,
      upstreamUrl: undefined,
      trace: this.tracing?.startRequest(kind, channel.requestId),
    };
    let status = 200;
    try {
      status = await this.run(flow, body, disaggId);
    } catch (caught) {
      const err = caught instanceof NoServerAvailableError
        ? new HttpApiError(503, caught.message, { code: 'no_server_available', headers: { 'retry-after': '1' } })
        : caught instanceof ClientGoneError && flow.deadline.expired
          ? deadlineError(flow)
          : caught;
      status = err instanceof HttpApiError ? err.getStatus() : err instanceof ClientGoneError ? 499 : 500;
      if (err instanceof HttpApiError) flow.done.errorKind ??= err.body.error.code ?? err.body.error.type;
      throw err;
    } finally {
      flow.deadline.clear();
      this.finishAll(flow, status < 400);
      const end = performance.now() - flow.started;
      timings.end = end;
      flow.done.status = status;
      flow.done.startedAt = Date.now() - end;
      this.events.emit('requestDone', flow.done);
      flow.trace?.end(flow.done);
    }
  }

  private async run(flow: Flow, body: Record<string, unknown>, disaggId: number): Promise<number> {
    if (this.aggregated) {
      flow.done.mode = 'aggregated';
      return this.generate(flow, () => serializeRequest(withTokenIds(flow.kind, body, flow.routing.tokenIds)), undefined, []);
    }
    if (this.config.schedule_style === 'generation_first') return this.generationFirst(flow, body, disaggId);
    // Checked here so the common path does not pay for an async call that returns nothing.
    const reserved = this.config.conditional_disagg_config ? await this.conditionalReservation(flow) : undefined;
    if (reserved?.skipContext) {
      flow.done.mode = 'local_prefill';
      return this.generate(flow, serializeRequest(withTokenIds(flow.kind, stripContextOnly(body), flow.routing.tokenIds)), undefined, [], reserved.routed);
    }
    const ctx = await this.contextPhase(flow, body, disaggId, reserved?.routed);
    if (ctx.status !== 200) {
      flow.channel.sendJson(ctx.status, ctx.text);
      return ctx.status;
    }
    const choice = ctx.choice;
    if (ctx.finished) {
      flow.done.mode = 'context_only_finish';
      if (reserved) this.finish(flow, reserved.routed.router, true);
      delete choice.disaggregated_params;
      await this.answerFromContext(flow, ctx.json);
      return 200;
    }
    const genBody = buildGenerationBody(flow.kind, body, ctx.json, disaggId);
    flow.done.ctxRequestId = (genBody.disaggregated_params as { ctx_request_id?: number }).ctx_request_id;
    return this.generate(flow, serializeRequest(genBody), contextUsageOf(ctx.json), [ctx.server], reserved?.routed);
  }

  /** schedule_style generation_first (see generation-first.ts): both calls go out at once. */
  private async generationFirst(flow: Flow, body: Record<string, unknown>, disaggId: number): Promise<number> {
    flow.done.mode = 'generation_first';
    const ctxRouter = this.routers.router('context');
    const ctxRoute = this.picked(flow, ctxRouter, 'context', await this.pick(flow, ctxRouter, 'context', []));
    flow.done.contextServer = ctxRoute.server.url;
    flow.done.ctxRequestId = disaggId;
    const bodies = generationFirstBodies(withTokenIds(flow.kind, body, flow.routing.tokenIds), disaggId, conversationIdOf(body), ctxRoute.server.serverInfo);
    let genText: string, ctxText: string;
    try {
      genText = serializeRequest(bodies.generation);
      ctxText = serializeRequest(bodies.context);
    } catch (err) {
      this.finish(flow, ctxRouter, false);
      throw err;
    }
    const linked = channelWithOwnAbort(flow.channel);
    const generation = this.generate({ ...flow, channel: linked.channel }, genText, undefined, [ctxRoute.server.url]);
    generation.catch(() => undefined);
    flow.timings.contextStart = performance.now() - flow.started;
    const timeoutMs = (this.config.timeouts.context_first_byte_s ?? this.config.timeouts.request_s) * 1000;
    let failure: Error | { status: number; text: string } | undefined;
    try {
      const { res, limit } = await this.send(flow, 'context', ctxText, [], timeoutMs, false, { router: ctxRouter, route: ctxRoute });
      const text = await readAnswerText(res, limit).catch((err: unknown) => {
        if (!(err instanceof AnswerTooLargeError)) throw err;
        throw new HttpApiError(502, `context server ${ctxRoute.server.url} sent an answer larger than the limit of ${limit} bytes`, { code: 'answer_too_large' });
      });
      flow.timings.contextEnd = performance.now() - flow.started;
      this.finish(flow, ctxRouter, res.statusCode === 200);
      if (res.statusCode !== 200) failure = { status: res.statusCode, text };
    } catch (err) {
      this.finish(flow, ctxRouter, false);
      failure = err as Error;
    }
    if (failure === undefined) return generation;
    // No KV cache will come: the waiting generation call is aborted, the context failure answered.
    linked.abort.abort();
    await generation.catch(() => undefined);
    if (failure instanceof Error) throw failure;
    if (!flow.channel.headersSent) flow.channel.sendJson(failure.status, failure.text);
    return failure.status;
  }

  /**
   * Conditional disaggregation: the generation server is chosen first; when it already holds
   * most of the prompt, it prefills the rest itself and the context phase is skipped.
   */
  private async conditionalReservation(flow: Flow): Promise<{ routed: RouteResultWithRouter; skipContext: boolean } | undefined> {
    const cond = this.config.conditional_disagg_config;
    if (!cond) return undefined;
    const router = this.routers.router('generation');
    const route = this.picked(flow, router, 'generation', await this.pick(flow, router, 'generation', []));
    const matched = route.info.matchedTokens ?? 0;
    const total = route.info.promptTokens ?? 0;
    const skipContext = matched > 0 && total - matched <= cond.max_local_prefill_length;
    return { routed: { router, route }, skipContext };
  }

  private async contextPhase(
    flow: Flow,
    body: Record<string, unknown>,
    disaggId: number,
    reservedGen: RouteResultWithRouter | undefined,
  ): Promise<ContextResult> {
    const conversationId = conversationIdOf(body);
    // Built once the context router picked: a KV-aware router may have tokenized the prompt.
    const ctxBody = (): string => serializeRequest({
      ...withTokenIds(flow.kind, body, flow.routing.tokenIds),
      stream: false,
      stream_options: null,
      disaggregated_params: {
        request_type: 'context_only',
        disagg_request_id: disaggId,
        ...(conversationId !== undefined ? { conversation_id: conversationId } : {}),
      },
    });
    flow.timings.contextStart = performance.now() - flow.started;
    const exclude = reservedGen ? [reservedGen.route.server.url] : [];
    const timeoutMs = (this.config.timeouts.context_first_byte_s ?? this.config.timeouts.request_s) * 1000;
    const { router, route, res, limit } = await this.send(flow, 'context', ctxBody, exclude, timeoutMs, false);
    const server = route.server;
    flow.done.contextServer = server.url;
    const text = await this.readAnswer(flow, router, route, res, limit, 'context');
    flow.timings.contextEnd = performance.now() - flow.started;
    if (res.statusCode !== 200) {
      this.finish(flow, router, true);
      return { status: res.statusCode, text: workerErrorBody('context', res.statusCode, text), json: {}, choice: {}, finished: false, server: server.url };
    }
    const json = parseJsonObject(text);
    if (!json) {
      this.finish(flow, router, false);
      this.badResponse(flow, 'context', route, 'an answer that is not a JSON object');
    }
    const checked = checkContextAnswer(json!);
    if (!checked.ok) {
      this.finish(flow, router, false);
      this.badResponse(flow, 'context', route, checked.problem);
    }
    // The context server's work is done: release its load (and let a KV-aware router poll).
    this.finish(flow, router, true);
    return { status: 200, text, json: json!, choice: checked.choice, finished: checked.finished, server: server.url };
  }

  /** A non-streamed answer whole, within its size limit; transport failures become 502/504. */
  private async readAnswer(flow: Flow, router: Router, route: RouteResult, res: Dispatcher.ResponseData, limit: number, role: ServerRole): Promise<string> {
    try {
      return await readAnswerText(res, limit);
    } catch (err) {
      this.finish(flow, router, false);
      if (err instanceof AnswerTooLargeError) this.badResponse(flow, role, route, `an answer larger than the limit of ${limit} bytes`, 'answer_too_large');
      throw this.transportError(flow, role, route, err);
    }
  }

  /** The generation phase (or the whole request in aggregated mode); streams to the client. */
  private async generate(
    flow: Flow,
    genBody: string | (() => string),
    ctxUsage: ContextUsage | undefined,
    exclude: string[],
    reserved?: RouteResultWithRouter,
  ): Promise<number> {
    flow.timings.generationStart = performance.now() - flow.started;
    const stream = flow.done.stream;
    // A non-streamed answer's head comes with its end: only the whole-call deadline bounds it.
    const firstByteS = stream ? this.config.timeouts.generation_first_byte_s : undefined;
    const timeoutMs = (firstByteS ?? this.config.timeouts.request_s) * 1000;
    if (firstByteS !== undefined) flow.deadline.armFirstEvent(timeoutMs);
    const { router, route, res, limit } = await this.send(flow, 'generation', genBody, exclude, timeoutMs, stream, reserved);
    flow.done.generationServer = route.server.url;
    flow.timings.firstByte = performance.now() - flow.started;
    const contentType = String(res.headers['content-type'] ?? '');
    if (res.statusCode !== 200 || !stream) {
      let text = await this.readAnswer(flow, router, route, res, limit, 'generation');
      if (res.statusCode !== 200) {
        this.finish(flow, router, true);
        flow.channel.sendJson(res.statusCode, workerErrorBody('generation', res.statusCode, text));
        return res.statusCode;
      }
      const json = parseJsonObject(text);
      if (!json) {
        this.finish(flow, router, false);
        this.badResponse(flow, 'generation', route, 'an answer that is not JSON');
      }
      if (ctxUsage && json!.usage && rewriteUsage(json!.usage, ctxUsage)) text = JSON.stringify(json);
      this.finish(flow, router, true);
      flow.channel.sendJson(200, text);
      return 200;
    }
    if (!contentType.includes('text/event-stream')) {
      // dump() drains (or drops) the body without an unhandled 'error' event, which destroy() would emit.
      res.body.dump().catch(() => undefined);
      this.finish(flow, router, false);
      this.badResponse(flow, 'generation', route, `a streaming answer of type '${contentType || 'none'}'`);
    }
    return this.relayStream(flow, router, route, res, ctxUsage);
  }

  private async relayStream(
    flow: Flow,
    router: Router,
    route: RouteResult,
    res: Dispatcher.ResponseData,
    ctxUsage: ContextUsage | undefined,
  ): Promise<number> {
    const channel = flow.channel;
    const rewriter = new SseUsageRewriter(ctxUsage);
    // The upstream's first event usually came with its head: it is buffered already.
    channel.startStream(res.body.readableLength > 0);
    try {
      for await (const chunk of res.body) {
        const out = rewriter.push(chunk as Buffer);
        if (out.length) {
          if (flow.deadline.waitingForFirstEvent) flow.deadline.firstEvent();
          const drained = channel.write(out);
          if (drained) await drained;
        }
      }
      const rest = rewriter.flush();
      if (rest) await channel.write(rest);
    } catch (err) {
      this.finish(flow, router, false);
      if (channel.abort.aborted) throw new ClientGoneError();
      const kind = classifyTransportError(err);
      this.events.emit('upstreamFailure', { requestId: channel.requestId, role: 'generation', server: route.server, kind, detail: (err as Error).message });
      flow.done.errorKind = kind;
      await this.streamError(flow, kind === 'timeout' ? 504 : 502,
        kind === 'timeout'
          ? `generation server ${route.server.url} went silent mid-stream`
          : `generation server ${route.server.url} broke the stream (${kind})`);
      return kind === 'timeout' ? 504 : 502;
    }
    if (!rewriter.sawDone) {
      this.finish(flow, router, false);
      this.events.emit('upstreamFailure', { requestId: channel.requestId, role: 'generation', server: route.server, kind: 'bad_response', detail: 'stream ended without [DONE]' });
      flow.done.errorKind = 'bad_response';
      await this.streamError(flow, 502, `generation server ${route.server.url} ended the stream without [DONE]`);
      return 502;
    }
    this.finish(flow, router, true);
    channel.end();
    return 200;
  }

  /** A final OpenAI-style error event once the stream has started, then the end. */
  private async streamError(flow: Flow, status: number, message: string): Promise<void> {
    const err = new HttpApiError(status, message);
    this.logger.warn(`[${flow.channel.requestId}] ${message}`);
    if (!flow.channel.abort.aborted) {
      await flow.channel.write(`data: ${JSON.stringify(err.body)}\n\n`)?.catch(() => undefined);
    }
    flow.channel.end();
  }

  /** An early-finished request: the context answer is the whole answer. */
  private async answerFromContext(flow: Flow, json: Record<string, unknown>): Promise<void> {
    if (!flow.done.stream) {
      flow.channel.sendJson(200, JSON.stringify(json));
      return;
    }
    flow.channel.startStream(true);
    await flow.channel.write(`data: ${JSON.stringify(toStreamChunk(flow.kind, json))}\n\ndata: [DONE]\n\n`);
    flow.channel.end();
  }

  /**
   * Picks a server and sends, retrying connection failures and 5xx answers on another server
   * (the failed ones excluded) up to max_retries, or on the same one after a backoff when no
   * other is left. Nothing has reached the client yet, so a retry is always safe here. 4xx
   * answers are returned as they are. A 500 counts against its server only once another
   * server answered the same request (see reportFailures).
   */
  private async send(
    flow: Flow,
    role: ServerRole,
    body: string | (() => string),
    /** Owned by this call: failed servers are added to it. */
    excluded: string[],
    timeoutMs: number,
    stream: boolean,
    reserved?: RouteResultWithRouter,
  ): Promise<Routed> {
    const failures: string[] = [];
    let lastFailed: string | undefined;
    let sameServer: SameServerRetry | undefined;
    let unproven: UpstreamFailureEvent[] | undefined;
    const attempts = this.config.max_retries + 1;
    const headers = stream ? (flow.streamHeaders ??= { ...flow.headers, accept: 'text/event-stream' }) : flow.headers;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (flow.channel.abort.aborted) throw new ClientGoneError();
      let router: Router;
      let route: RouteResult;
      if (attempt === 0 && reserved) {
        ({ router, route } = reserved);
      } else {
        router = this.routers.router(role);
        try {
          route = this.picked(flow, router, role, await this.pick(flow, router, role, excluded));
        } catch (err) {
          if (!(err instanceof NoServerAvailableError) || !failures.length) throw err;
          // No other server left: the one that failed, again, after a backoff.
          if (!(await (sameServer ??= new SameServerRetry()).readmit(excluded, lastFailed, flow.channel.abort))) {
            if (flow.channel.abort.aborted) throw new ClientGoneError();
            break;
          }
          try {
            route = this.picked(flow, router, role, await this.pick(flow, router, role, excluded));
          } catch (again) {
            if (again instanceof NoServerAvailableError) break;
            throw again;
          }
        }
      }
      if (attempt > 0) {
        flow.done.retries += 1;
        this.events.emit('retry', { role, requestId: flow.channel.requestId });
      }
      const server = route.server;
      flow.upstreamRole = role;
      flow.upstreamUrl = server.url;
      let payload: string;
      try {
        // The router's own work: a failure here is never the server's.
        payload = typeof body === 'string' ? body : (body = body());
      } catch (err) {
        this.finish(flow, router, true);
        throw err;
      }
      flow.trace?.callStarted(role, server.url, attempt, headers);
      try {
        const res = await this.session.request({
          origin: server.origin,
          path: INFERENCE_PATH[flow.kind],
          method: 'POST',
          headers,
          body: payload,
          signal: flow.channel.abort,
          headersTimeoutMs: timeoutMs,
          // A stalled stream must never hang forever: without stream_idle_s, request_s bounds the silence.
          bodyTimeoutMs: stream ? (this.config.timeouts.stream_idle_s ?? this.config.timeouts.request_s) * 1000 : timeoutMs,
        });
        const status = res.statusCode;
        if (status === 200 || (status >= 400 && status < 500)) {
          if (unproven) this.reportFailures(unproven, status === 200 ? 'status_5xx' : 'status_500');
          return { router, route, res, limit: answerLimitFor(this.config.limits.max_answer_bytes, payload.length, flow.routing.body) };
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
  private pick(flow: Flow, router: Router, role: ServerRole, excluded: readonly string[]): Promise<RouteResult> {
    flow.trace?.routingStarted(role);
    if (!this.admission?.poolLimited(role)) return router.getNextServer(flow.routing, { excludeServer: excluded });
    return this.pickInPoolSlot(flow, router, role, excluded);
  }

  /** A per-pool slot is held with the reservation and released in finish(). */
  private async pickInPoolSlot(flow: Flow, router: Router, role: ServerRole, excluded: readonly string[]): Promise<RouteResult> {
    await this.admission!.enterPool(role, flow.channel.abort.signal);
    try {
      return await router.getNextServer(flow.routing, { excludeServer: excluded });
    } catch (err) {
      this.admission!.leavePool(role);
      throw err;
    }
  }

  /** Records a reservation made by `pick`, to be finished exactly once. */
  private picked(flow: Flow, router: Router, role: ServerRole, route: RouteResult): RouteResult {
    flow.pending.push(router);
    flow.trace?.routed(role, router.policy, route);
    this.events.emit('routed', { role, server: route.server, policy: router.policy, matchedTokens: route.info.matchedTokens, promptTokens: route.info.promptTokens, untokenized: route.info.untokenized });
    return route;
  }

  /** finishRequest once per router reservation; its KV polling runs off the request path. */
  private finish(flow: Flow, router: Router, success: boolean): void {
    const i = flow.pending.indexOf(router);
    if (i < 0) return;
    flow.pending.splice(i, 1);
    this.admission?.leavePool(router.role);
    router.finishRequest(flow.routing, { success }).catch(this.onFinishError);
  }

  private finishAll(flow: Flow, success: boolean): void {
    for (const router of [...flow.pending]) this.finish(flow, router, success);
  }

  private badResponse(flow: Flow, role: ServerRole, route: RouteResult, what: string, code = 'bad_upstream_response'): never {
    this.events.emit('upstreamFailure', { requestId: flow.channel.requestId, role, server: route.server, kind: 'bad_response', detail: what });
    flow.done.errorKind = 'bad_response';
    throw new HttpApiError(502, `${role} server ${route.server.url} sent ${what}`, { code });
  }

  private transportError(flow: Flow, role: ServerRole, route: RouteResult, err: unknown): Error {
    if (flow.channel.abort.aborted) return new ClientGoneError();
    const kind = classifyTransportError(err);
    flow.done.errorKind = kind;
    this.events.emit('upstreamFailure', { requestId: flow.channel.requestId, role, server: route.server, kind, detail: (err as Error).message });
    const url = route.server.url;
    if (kind === 'timeout') return new HttpApiError(504, `${role} server ${url} timed out`, { code: 'upstream_timeout' });
    return new HttpApiError(502, `${role} server ${url} failed mid-answer (${kind})`, { code: 'upstream_error' });
  }
}

interface ContextResult {
  status: number;
  text: string;
  json: Record<string, unknown>;
  choice: Record<string, unknown>;
  finished: boolean;
  server: string;
}

/** The 504 of a request whose deadline passed (the abort it fired is not the client leaving). */
function deadlineError(flow: Flow): HttpApiError {
  const server = flow.upstreamUrl ? `${flow.upstreamRole} server ${flow.upstreamUrl}` : 'the cluster';
  flow.done.errorKind = 'timeout';
  return flow.deadline.expired === 'first_event'
    ? new HttpApiError(504, `${server} sent no event within timeouts.generation_first_byte_s`, { code: 'upstream_timeout' })
    : new HttpApiError(504, `the request did not complete within timeouts.request_s (${flow.deadline.requestMs / 1000} s), waiting on ${server}`, { code: 'upstream_timeout' });
}


type RouteResultWithRouter = { router: Router; route: RouteResult };

function conversationIdOf(body: Record<string, unknown>): unknown {
  return (body.disaggregated_params as Record<string, unknown> | undefined)?.conversation_id;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** PROTOCOL.md section 3 step 3: the generation_only request. */
function buildGenerationBody(
  kind: RequestKind,
  body: Record<string, unknown>,
  ctx: Record<string, unknown>,
  disaggId: number,
): Record<string, unknown> {
  const choice = (ctx.choices as Record<string, unknown>[])[0];
  const params = { ...(choice.disaggregated_params as Record<string, unknown>) };
  params.request_type = 'generation_only';
  params.disagg_request_id = disaggId;
  const conversationId = conversationIdOf(body);
  if (conversationId !== undefined) params.conversation_id = conversationId;
  const gen: Record<string, unknown> = { ...body, disaggregated_params: params };
  const ids = ctx.prompt_token_ids;
  if (Array.isArray(ids) && ids.length) {
    if (kind === 'completion') gen.prompt = ids;
    else gen.prompt_token_ids = ids;
  }
  return gen;
}

/** The prompt as the token ids a router computed, so workers skip tokenizing it again. */
function withTokenIds(kind: RequestKind, body: Record<string, unknown>, ids: number[] | undefined): Record<string, unknown> {
  // Ids the client sent itself are in the body already: no copy of it.
  if (!ids || ids === (kind === 'completion' ? body.prompt : body.prompt_token_ids)) return body;
  return kind === 'completion' ? { ...body, prompt: ids } : { ...body, prompt_token_ids: ids };
}

/** A client's own disaggregated_params must not reach a server doing the whole request. */
function stripContextOnly(body: Record<string, unknown>): Record<string, unknown> {
  const params = body.disaggregated_params as Record<string, unknown> | undefined;
  if (!params || params.request_type !== 'context_only') return body;
  const { disaggregated_params: _dropped, ...rest } = body;
  return rest;
}

/** A complete non-streaming answer as one SSE chunk (early finish for a streaming client). */
function toStreamChunk(kind: RequestKind, json: Record<string, unknown>): Record<string, unknown> {
  if (kind === 'completion') return json;
  const choices = (json.choices as Record<string, unknown>[]).map((c) => {
    const { message, ...rest } = c;
    return { ...rest, delta: message };
  });
  return { ...json, object: 'chat.completion.chunk', choices };
}
