import type * as http from 'node:http';
import { serializeKvEvents } from '../kv-cache/kv-events';
import { countTokensAnswer } from './count-tokens';
import { answerTerminalFault } from './fault-answers';
import type { SimEndpoint } from './faults';
import { answerGeneration } from './generation-answer';
import { planGeneration } from './generation-plan';
import { BadRequestError, type GenerationEndpoint, parseSimRequest, type SimRequest } from './openai-request';
import { errorBody } from './openai-response';
import type { ControlResult } from './sim-control';
import { decodeRequestBody } from './request-body';
import { readBody, readBodyBytes, sendJson, sendText } from './sim-http';
import type { SimState } from './sim-state';

/** The HTTP face of a simulated worker: the trtllm-serve endpoints plus /sim/control and /sim/stats. */
export class SimRequestHandler {
  constructor(
    private readonly state: SimState,
    private readonly control: (request: unknown) => ControlResult,
    private readonly stats: () => unknown,
  ) {}

  readonly onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const state = this.state;
    state.inFlight++;
    res.once('close', () => state.inFlight--);
    const c = state.counters;
    c.total++;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q >= 0 ? url.slice(0, q) : url;
    const method = req.method ?? 'GET';
    const maxBody = state.options.maxBodyBytes;
    switch (path) {
      case '/v1/completions':
      case '/v1/chat/completions':
      case '/v1/responses': {
        const endpoint: GenerationEndpoint = path === '/v1/completions' ? 'completions' : path === '/v1/responses' ? 'responses' : 'chat';
        c.count(endpoint);
        if (method !== 'POST') return methodNotAllowed(res);
        return readBodyBytes(req, maxBody, res, (bytes) => {
          try {
            this.onGeneration(endpoint, req, res, bytes);
          } catch (err) {
            if (!res.headersSent) sendJson(res, 500, errorBody(`simulator error: ${(err as Error).message}`, 500, 'InternalServerError'));
            else res.destroy();
          }
        });
      }
      case '/v1/messages/count_tokens':
        c.count('count_tokens');
        if (method !== 'POST') return methodNotAllowed(res);
        return readBody(req, maxBody, res, (text) => {
          const answer = countTokensAnswer(text, state.tokenizer);
          sendJson(res, answer.status, answer.body);
        });
      case '/health':
        c.count('health');
        return this.simple('health', req, res, () => {
          if (state.healthy) sendText(res, 200, '');
          else sendJson(res, 503, errorBody('worker marked unhealthy', 503, 'ServiceUnavailable'));
        });
      case '/server_info':
        c.count('server_info');
        return this.simple('server_info', req, res, () => sendJson(res, 200, JSON.stringify(this.serverInfo())));
      case '/v1/models':
        c.count('models');
        return this.simple('models', req, res, () =>
          sendJson(
            res,
            200,
            JSON.stringify({
              object: 'list',
              data: [{ id: state.options.model, object: 'model', created: 0, owned_by: 'tensorrt_llm' }],
            }),
          ),
        );
      case '/kv_cache_events':
        c.count('kv_cache_events');
        // Drain only when answering, so a failed poll does not lose events.
        return readBody(req, maxBody, res, () =>
          this.simple('kv_cache_events', req, res, () => sendJson(res, 200, state.options.kvReports ? '[]' : serializeKvEvents(state.kv.drainEvents()))),
        );
      case '/perf_metrics':
      case '/steady_clock_offset':
        c.count('other');
        state.perf.handle(path, method, req, res);
        return;
      case '/sim/control':
        c.count('control');
        if (method !== 'POST') return methodNotAllowed(res);
        return readBody(req, maxBody, res, (text) => this.onControl(res, text));
      case '/sim/stats':
        c.count('stats');
        return sendJson(res, 200, JSON.stringify(this.stats()));
      default:
        c.count('other');
        sendJson(res, 404, errorBody(`no route ${method} ${path}`, 404, 'NotFoundError'));
    }
  };

  private serverInfo(): Record<string, unknown> {
    const state = this.state;
    return {
      kv_cache_hash_algo: state.options.kvHashAlgo,
      worker_id: state.options.workerId,
      server_role: state.role,
      model: state.options.model,
      tokens_per_block: state.options.tokensPerBlock,
      max_batch_size: state.latency.maxBatchSize || null,
      disaggregated_params: {},
    };
  }

  /** Non-generation endpoints: apply a fault rule for them, if one fires, else answer. */
  private simple(endpoint: SimEndpoint, req: http.IncomingMessage, res: http.ServerResponse, answer: () => void): void {
    const faults = this.state.faults;
    const fault = faults.empty ? undefined : faults.pick(endpoint);
    if (!fault) return answer();
    if (answerTerminalFault(this.state, fault, req, res)) return;
    if (fault.kind === 'slow') {
      const scope = this.state.openScope(res);
      void scope.sleep(fault.delayMs ?? 1000).then(() => {
        if (!scope.closed) answer();
        scope.finish();
      });
      return;
    }
    answer();
  }

  private onControl(res: http.ServerResponse, text: string): void {
    let result: ControlResult;
    try {
      result = this.control(text ? JSON.parse(text) : {});
    } catch (err) {
      return sendJson(res, 400, errorBody(`invalid control request: ${(err as Error).message}`, 400));
    }
    sendJson(res, 200, JSON.stringify(result));
  }

  private onGeneration(endpoint: GenerationEndpoint, req: http.IncomingMessage, res: http.ServerResponse, bytes: Buffer): void {
    const state = this.state;
    const decoded = decodeRequestBody(req, bytes, state.options.msgpack);
    if (!decoded.ok) {
      state.counters.rejected++;
      return sendJson(res, decoded.status, decoded.answer);
    }
    const body = decoded.body;
    state.counters.byEncoding[decoded.encoding]++;
    state.counters.remember(body);
    let sr: SimRequest;
    try {
      sr = parseSimRequest(endpoint, body, state.tokenizer, state.options.defaultMaxTokens);
      const promptTokens = sr.prompts.reduce((n, p) => n + p.length, 0);
      if (promptTokens + sr.maxTokens > state.options.maxSeqLen) {
        throw new BadRequestError(`prompt (${promptTokens} tokens) plus max_tokens (${sr.maxTokens}) exceeds max_seq_len ${state.options.maxSeqLen}`);
      }
    } catch (err) {
      if (err instanceof BadRequestError) return this.reject(res, err.message);
      throw err;
    }
    state.counters.byType[sr.type]++;
    const fault = state.faults.empty ? undefined : state.faults.pick(endpoint, sr.type);
    if (fault && answerTerminalFault(state, fault, req, res)) return;
    const refusal = this.checkRole(sr);
    if (refusal) return this.reject(res, refusal);
    const plan = planGeneration(state, sr, fault);
    state.rankInFlight[plan.dpRank]++;
    res.once('close', () => state.rankInFlight[plan.dpRank]--);
    answerGeneration(state, req, res, plan);
  }

  private checkRole(sr: SimRequest): string | undefined {
    const role = this.state.role;
    if (sr.type === 'context_only' && role === 'generation') {
      return 'this is a generation server: it does not serve context_only requests';
    }
    if (sr.type === 'generation_only') {
      if (role === 'context') return 'this is a context server: it does not serve generation_only requests';
      const id = sr.disagg!.ctx_request_id as number;
      if (this.state.options.ctxCheck === 'registry' && !this.state.registry!.has(id)) {
        return `unknown ctx_request_id ${id}: no KV cache was transferred for it`;
      }
    }
    return undefined;
  }

  private reject(res: http.ServerResponse, message: string): void {
    this.state.counters.rejected++;
    sendJson(res, 400, errorBody(message, 400));
  }
}

function methodNotAllowed(res: http.ServerResponse): void {
  sendJson(res, 405, errorBody('method not allowed', 405, 'MethodNotAllowed'));
}
