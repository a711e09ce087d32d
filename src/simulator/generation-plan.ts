import { allocateCtxRequestId } from './ctx-registry';
import type { FaultRule } from './faults';
import type { SimRequest } from './openai-request';
import { completionBody, newResponseMeta, streamSteps, usageOf } from './openai-response';
import { responsesBody, responsesStreamSteps } from './responses-response';
import type { SimState } from './sim-state';
import type { Generation } from './text-generator';

/** What a generation request will answer, computed before any waiting. */
export interface GenerationPlan {
  sr: SimRequest;
  fault: FaultRule | undefined;
  gens: Generation[];
  /** Non-streaming body, or SSE events grouped by decode step. */
  body?: string;
  steps?: string[][];
  initialDelayMs: number;
  decodeSteps: number;
  consumeCtxId?: number;
  /** The data-parallel rank that served it. */
  dpRank: number;
  /** For /perf_metrics: the request's ctx_request_id and arrival on the worker's clock. */
  perfCtxId?: number;
  arrivedAt: number;
}

/** Admits the prompts to the KV cache, generates the answer and times it by the latency model. */
export function planGeneration(state: SimState, sr: SimRequest, fault: FaultRule | undefined): GenerationPlan {
  const generator = state.generator();
  const model = sr.model ?? state.options.model;
  const gens: Generation[] = [];
  let promptTokens = 0;
  let cachedTokens = 0;
  let completionTokens = 0;
  let prefillTokens = 0;
  const firstTokens = sr.type === 'generation_only' ? (sr.disagg!.first_gen_tokens ?? undefined) : undefined;
  const dpRank = state.rankFor(sr.disagg?.route_hint);
  state.counters.byDpRank[dpRank] = (state.counters.byDpRank[dpRank] ?? 0) + 1;
  const kv = state.kvRanks[dpRank];
  for (const prompt of sr.prompts) {
    const admitted = kv.admit(prompt, kv.chainFor(prompt, sr.cacheSalt));
    const g = generator.generate(prompt, sr.type === 'context_only' ? 1 : sr.maxTokens, sr.stop, firstTokens);
    gens.push(g);
    promptTokens += prompt.length;
    cachedTokens += admitted.cachedTokens;
    completionTokens += g.tokenIds.length;
    // The generation phase received the prompt's KV: no prefill there.
    if (sr.type !== 'generation_only') prefillTokens += prompt.length - admitted.cachedTokens;
  }
  const usage = usageOf(promptTokens, completionTokens, cachedTokens);
  const meta = newResponseMeta(sr.endpoint, model);
  const lat = state.latency;
  const plan: GenerationPlan = {
    sr,
    fault,
    gens,
    initialDelayMs: lat.overheadMs + prefillTokens * lat.prefillMsPerToken + (fault?.kind === 'slow' ? (fault.delayMs ?? 1000) : 0),
    decodeSteps: sr.type === 'context_only' ? 0 : Math.max(0, ...gens.map((g) => g.tokenIds.length - 1)),
    dpRank,
    arrivedAt: state.perf.now(),
  };
  if (sr.type === 'context_only') {
    const ctxRequestId = allocateCtxRequestId();
    plan.perfCtxId = ctxRequestId;
    const g = gens[0];
    state.registry?.publish(ctxRequestId, {
      promptLength: sr.prompts[0].length,
      firstGenTokens: g.tokenIds,
      contextUrl: state.url,
    });
    const disagg =
      fault?.kind === 'no_disagg_params'
        ? undefined
        : {
            request_type: 'context_only',
            first_gen_tokens: g.tokenIds,
            ctx_request_id: ctxRequestId,
            encoded_opaque_state: Buffer.from(`sim:${state.port}:${ctxRequestId}`).toString('base64'),
            draft_tokens: null,
            disagg_request_id: sr.disagg!.disagg_request_id ?? null,
          };
    plan.body = JSON.stringify(
      sr.endpoint === 'responses'
        ? responsesBody(meta, g, usage, { disagg, promptTokenIds: sr.prompts[0] })
        : completionBody(sr.endpoint, meta, gens, usage, disagg, sr.prompts[0]),
    );
    return plan;
  }
  if (sr.type === 'generation_only') plan.consumeCtxId = plan.perfCtxId = sr.disagg!.ctx_request_id as number;
  if (sr.endpoint === 'responses') {
    if (sr.stream) plan.steps = responsesStreamSteps(meta, gens[0], usage);
    else plan.body = JSON.stringify(responsesBody(meta, gens[0], usage));
  } else if (sr.stream) plan.steps = streamSteps(sr.endpoint, meta, gens, sr.includeUsage ? usage : undefined);
  else plan.body = JSON.stringify(completionBody(sr.endpoint, meta, gens, usage));
  return plan;
}
