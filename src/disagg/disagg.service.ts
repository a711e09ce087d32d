import { Inject, Injectable, Optional } from '@nestjs/common';
import { APP_CONFIG, trtllmEnv, type AppConfig, type ServerRole } from '../config';
import { RequestTracing } from '../observability/tracing';
import { RETURN_METRICS_HEADER, ResponsePerfMetrics } from '../observability';
import { HttpApiError } from '../common';
import { NoServerAvailableError, type RequestKind, type RoutingRequest } from '../routing';
import { ServerRegistry } from '../servers';
import { readAnswerText, AnswerTooLargeError } from './answer-body';
import { channelWithOwnAbort, type ClientChannel } from './client-channel';
import { defaultNodeId, nextDisaggRequestId } from './disagg-request-id';
import { RequestEvents } from '../request-events';
import { deadlineError, newFlow, type Flow, type Reservation, type RoutingView } from './request-flow';
import { StreamRelay } from './stream-relay';
import { RequestSigner } from './request-signer';
import { WorkerBody } from './worker-body';
import { WorkerBodyEncodings } from './worker-body-encodings';
import {
  type ContextAnswerOk, benchmarkGenerationBody, contextRequestBody, finishedContextAnswer, generationFirstBodies, generationParams, generationRequest,
  parseContextAnswer, stripContextOnly, withConversation, withDisaggRequestId, withPromptTokens,
} from './trtllm-protocol';
import { protocolOf } from './kind-protocols';
import { UpstreamDispatch, type Attempt, type Attempts } from './upstream-dispatch';
import { ClientGoneError } from '../common';
import type { ContextUsage } from './usage';
import { workerErrorBody } from './worker-error';

type Body = Record<string, unknown>;

/** One attempt's body, and what its signatures cover (see RequestSigner). */
interface SignableBody {
  sent: WorkerBody;
  /** The request's model and conversation_params, as sent. */
  body: Body;
  /** The disaggregated_params sent. */
  params: Body;
}

/** What the context phase ended with: a refusal to relay as it is, or an answer to continue from. */
type ContextOutcome =
  | { refused: false; answer: ContextAnswerOk; server: string }
  | { refused: true; status: number; text: string };

/**
 * The disaggregated request flow of trtllm-serve (see docs/protocol.md "Two-phase request"):
 * a context_only call on the context pool, then a generation_only call on the generation pool,
 * whose answer streams to the client. Also its variants: aggregated (no context pool), early
 * finish (the context answer is the whole answer), conditional disaggregation (a generation
 * server that holds most of the prompt prefills it itself) and generation_first.
 */
@Injectable()
export class DisaggService {
  private readonly nodeId: number;
  private readonly signer: RequestSigner;
  /** TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: generation-only benchmark mode (see benchmarkGenerationBody). */
  private readonly benchmarkGenOnly: boolean;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly servers: ServerRegistry,
    private readonly events: RequestEvents,
    private readonly dispatch: UpstreamDispatch,
    private readonly relay: StreamRelay,
    private readonly encodings: WorkerBodyEncodings,
    @Optional() private readonly tracing?: RequestTracing,
    @Optional() private readonly perf?: ResponsePerfMetrics,
  ) {
    this.nodeId = config.node_id ?? defaultNodeId();
    this.signer = new RequestSigner(config);
    this.benchmarkGenOnly = trtllmEnv().benchmarkGenOnly;
  }

  /** Aggregated when the cluster has no context pool (see ServerRegistry.hasContextPool). */
  get aggregated(): boolean {
    return !this.servers.hasContextPool();
  }

  /**
   * `routingView`: what the routers see instead of the body, for a kind they do not read
   * themselves (a Responses request is routed as the chat it is).
   */
  async handle(kind: RequestKind, body: Body, channel: ClientChannel, headers?: RoutingRequest['headers'], routingView?: RoutingView): Promise<void> {
    const disaggId = nextDisaggRequestId(this.nodeId);
    const flow = newFlow({
      disaggId, kind, body, channel, headers, routingView,
      subagentAffinity: this.signer.affinityOf(headers),
      requestMs: this.config.timeouts.request_s * 1000,
      trace: this.tracing?.startRequest(kind, channel.requestId),
    });
    const perf = this.perf?.begin(headers, channel.requestId, disaggId);
    if (perf) {
      // The workers are asked for their metrics with the client's own header.
      flow.perf = perf;
      flow.headers[RETURN_METRICS_HEADER] = '1';
    }
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
      this.dispatch.finishAll(flow, status < 400);
      const end = performance.now() - flow.started;
      flow.timings.end = end;
      flow.done.status = status;
      flow.done.startedAt = Date.now() - end;
      this.events.emit('requestDone', flow.done);
      flow.trace?.end(flow.done);
    }
  }

  private async run(flow: Flow, clientBody: Body, disaggId: number): Promise<number> {
    const { body, conversationId } = withConversation(clientBody, flow.routing.headers, this.config.forward_conversation_id);
    if (this.aggregated) return this.wholeRequest(flow, body);
    if (this.benchmarkGenOnly) {
      flow.done.mode = 'benchmark_gen_only';
      return this.generate(flow, this.attempts(flow, 'generation', benchmarkGenerationBody(withPromptTokens(flow.kind, body, flow.routing.tokenIds))), undefined, []);
    }
    if (this.config.schedule_style === 'generation_first') return this.generationFirst(flow, body, disaggId, conversationId);
    // Checked here so the common path does not pay for an async call that returns nothing.
    const reserved = this.config.conditional_disagg_config ? await this.conditionalReservation(flow) : undefined;
    if (reserved?.skipContext) {
      flow.done.mode = 'local_prefill';
      const local = withPromptTokens(flow.kind, stripContextOnly(body), flow.routing.tokenIds);
      return this.generate(flow, this.attempts(flow, 'generation', local), undefined, [], reserved.held);
    }
    const ctx = await this.contextPhase(flow, body, disaggId, conversationId, reserved?.held);
    if (ctx.refused) {
      flow.channel.sendJson(ctx.status, ctx.text);
      return ctx.status;
    }
    const answer = ctx.answer;
    if (answer.finished) {
      flow.done.mode = 'context_only_finish';
      if (reserved) this.dispatch.finish(flow, reserved.held.router, true);
      await this.relay.answerFromContext(flow, finishedContextAnswer(flow.kind, answer));
      return 200;
    }
    const genAttempts = this.attemptsWithIds(flow, 'generation', disaggId, (id) => {
      const params = generationParams(answer, id, conversationId);
      return { sent: generationRequest(flow.kind, body, answer, params), body, params };
    });
    flow.done.ctxRequestId = (answer.choice.disaggregated_params as { ctx_request_id?: number }).ctx_request_id;
    return this.generate(flow, genAttempts, protocolOf(flow.kind).contextUsage(answer.json), [ctx.server], reserved?.held);
  }

  /** Aggregated: one server does the whole request, given the prompt's ids its pick computed. */
  private async wholeRequest(flow: Flow, body: Body): Promise<number> {
    flow.done.mode = 'aggregated';
    const timeoutMs = this.generationStarts(flow);
    const first = await this.dispatch.pick(flow, 'generation', []);
    const whole = withPromptTokens(flow.kind, body, flow.routing.tokenIds);
    return this.generation(flow, first, this.attempts(flow, 'generation', whole), undefined, [], timeoutMs);
  }

  /**
   * Conditional disaggregation: the generation server is chosen first; when it already holds
   * most of the prompt, it prefills the rest itself and the context phase is skipped.
   */
  private async conditionalReservation(flow: Flow): Promise<{ held: Reservation; skipContext: boolean } | undefined> {
    const cond = this.config.conditional_disagg_config;
    if (!cond) return undefined;
    const held = await this.dispatch.pick(flow, 'generation', []);
    const matched = held.route.info.matchedTokens ?? 0;
    const total = held.route.info.promptTokens ?? 0;
    return { held, skipContext: matched > 0 && total - matched <= cond.max_local_prefill_length };
  }

  private async contextPhase(flow: Flow, body: Body, disaggId: number, conversationId: unknown, reservedGen: Reservation | undefined): Promise<ContextOutcome> {
    flow.timings.contextStart = performance.now() - flow.started;
    const exclude = reservedGen ? [reservedGen.route.server.url] : [];
    const first = await this.dispatch.pick(flow, 'context', exclude);
    // Built once the context router picked: a KV-aware router may have tokenized the prompt.
    const ctxBody = contextRequestBody(flow.kind, body, flow.routing.tokenIds, disaggId, conversationId);
    const attempts = this.attemptsWithIds(flow, 'context', disaggId, (id) => {
      const sent = withDisaggRequestId(ctxBody, id);
      return { sent: WorkerBody.of(sent), body: sent, params: sent.disaggregated_params as Body };
    });
    const call = await this.dispatch.send(flow, 'context', first, attempts, exclude, this.contextTimeoutMs(), false);
    const { router, route, res } = call;
    flow.done.contextServer = route.server.url;
    const answer = await this.dispatch.readAnswer(flow, 'context', call);
    flow.timings.contextEnd = performance.now() - flow.started;
    flow.perf?.fromHeaders('ctx', route.server.url, res.headers);
    if (res.statusCode !== 200) {
      this.dispatch.finish(flow, router, true);
      return { refused: true, status: res.statusCode, text: workerErrorBody('context', res.statusCode, answer) };
    }
    const parsed = parseContextAnswer(answer, flow.kind);
    if (!parsed.ok) {
      this.dispatch.finish(flow, router, false);
      this.dispatch.badResponse(flow, 'context', route, parsed.problem);
    }
    // The context server's work is done: release its load (and let a KV-aware router poll).
    this.dispatch.finish(flow, router, true);
    return { refused: false, answer: parsed, server: route.server.url };
  }

  /** schedule_style generation_first: both calls go out at once (see generationFirstBodies). */
  private async generationFirst(flow: Flow, body: Body, disaggId: number, conversationId: unknown): Promise<number> {
    flow.done.mode = 'generation_first';
    const ctx = await this.dispatch.pick(flow, 'context', []);
    const ctxServer = ctx.route.server;
    flow.done.contextServer = ctxServer.url;
    flow.done.ctxRequestId = disaggId;
    const bodies = generationFirstBodies(withPromptTokens(flow.kind, body, flow.routing.tokenIds), disaggId, conversationId, ctxServer.serverInfo);
    // The two calls are linked by this id (ctx_request_id), so a retry keeps it.
    const genAttempts = this.attempts(flow, 'generation', bodies.generation);
    const ctxSent = WorkerBody.of(bodies.context);
    const ctxAttempts = this.attempts(flow, 'context', bodies.context, ctxSent);
    // Written before either call goes out: the two bodies nest alike, so both can be written.
    this.dispatch.encode(flow, ctx, this.encodings.encoderFor(ctxServer), ctxSent);
    const linked = channelWithOwnAbort(flow.channel);
    const generation = this.generate({ ...flow, channel: linked.channel }, genAttempts, undefined, [ctxServer.url]);
    generation.catch(() => undefined);
    flow.timings.contextStart = performance.now() - flow.started;
    let failure: Error | { status: number; text: string } | undefined;
    try {
      const { res, limit, answerText } = await this.dispatch.send(flow, 'context', ctx, ctxAttempts, [], this.contextTimeoutMs(), false);
      const text = answerText ?? await readAnswerText(res, limit).catch((err: unknown) => {
        if (!(err instanceof AnswerTooLargeError)) throw err;
        throw new HttpApiError(502, `context server ${ctxServer.url} sent an answer larger than the limit of ${limit} bytes`, { code: 'answer_too_large' });
      });
      flow.timings.contextEnd = performance.now() - flow.started;
      flow.perf?.fromHeaders('ctx', ctxServer.url, res.headers);
      this.dispatch.finish(flow, ctx.router, res.statusCode === 200);
      if (res.statusCode !== 200) failure = { status: res.statusCode, text };
    } catch (err) {
      this.dispatch.finish(flow, ctx.router, false);
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

  /** The generation phase on the reserved server, or on one picked now (after the context phase). */
  private async generate(flow: Flow, body: Attempts, ctxUsage: ContextUsage | undefined, exclude: string[], reserved?: Reservation): Promise<number> {
    const timeoutMs = this.generationStarts(flow);
    const first = reserved ?? (await this.dispatch.pick(flow, 'generation', exclude));
    return this.generation(flow, first, body, ctxUsage, exclude, timeoutMs);
  }

  /** Marks the generation phase's start; a stream's first event gets its own deadline. */
  private generationStarts(flow: Flow): number {
    flow.timings.generationStart = performance.now() - flow.started;
    // A non-streamed answer's head comes with its end: only the whole-call deadline bounds it.
    const firstByteS = flow.done.stream ? this.config.timeouts.generation_first_byte_s : undefined;
    const timeoutMs = (firstByteS ?? this.config.timeouts.request_s) * 1000;
    if (firstByteS !== undefined) flow.deadline.armFirstEvent(timeoutMs);
    return timeoutMs;
  }

  private async generation(flow: Flow, first: Reservation, body: Attempts, ctxUsage: ContextUsage | undefined, exclude: string[], timeoutMs: number): Promise<number> {
    const call = await this.dispatch.send(flow, 'generation', first, body, exclude, timeoutMs, flow.done.stream);
    flow.done.generationServer = call.route.server.url;
    flow.timings.firstByte = performance.now() - flow.started;
    return this.relay.relay(flow, call, ctxUsage);
  }

  /**
   * The attempts of a call whose body does not change on a retry; the body itself when no
   * header is signed for it (the common case: nothing made per attempt).
   */
  private attempts(flow: Flow, role: ServerRole, body: Body, sent = WorkerBody.of(body)): Attempts {
    const headers = this.signer.headersFor({ role, body, params: body.disaggregated_params as Body | undefined, affinity: flow.routing.subagentAffinity });
    return headers ? () => ({ body: sent, headers }) : sent;
  }

  /**
   * The attempts of a call naming a disagg_request_id: each retry gets a fresh id, as
   * TensorRT-LLM issues one (a worker may still hold the failed attempt's), signed anew.
   * `build` gives the body sent under an id, and the fields and disaggregated_params the
   * signatures cover. Each attempt's body is encoded for its server by UpstreamDispatch.send.
   */
  private attemptsWithIds(flow: Flow, role: ServerRole, firstId: number, build: (id: number) => SignableBody): Attempts {
    const affinity = flow.routing.subagentAffinity;
    return (attempt): Attempt => {
      const { sent, body, params } = build(attempt === 0 ? firstId : nextDisaggRequestId(this.nodeId));
      return { body: sent, headers: this.signer.headersFor({ role, body, params, affinity }) };
    };
  }

  private contextTimeoutMs(): number {
    return (this.config.timeouts.context_first_byte_s ?? this.config.timeouts.request_s) * 1000;
  }
}
