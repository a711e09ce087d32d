import { conversationIdOf, type RequestKind, type RoutingRequest } from '../routing';
import { protocolOf } from './kind-protocols';
import { forgetMemberTexts, type JsonBodyText, serializeRequestText } from './serialize';
import { cutIdList, parseAroundCut } from '../common/id-list-text';
import { WorkerBody } from './worker-body';
import type { TokenIds } from '../common/token-id-array';

/**
 * The disaggregated wire protocol of TensorRT-LLM's workers: the bodies the router sends
 * (context_only, generation_only) and the checks on what the context phase answers.
 */

/** TensorRT-LLM's DisaggScheduleStyle.GENERATION_FIRST, as workers read it. */
export const GENERATION_FIRST = 1;

type Body = Record<string, unknown>;

/**
 * See docs/protocol.md "Conversation ids": the request's conversation id (body or headers) and
 * the body carrying it in `conversation_params`; the two-phase bodies also put it in
 * `disaggregated_params.conversation_id`. Not forwarding: a client's own
 * `disaggregated_params.conversation_id` only, nothing written.
 */
export function withConversation(body: Body, headers: RoutingRequest['headers'], forward: boolean): { body: Body; conversationId: unknown } {
  if (!forward) return { body, conversationId: (body.disaggregated_params as Body | undefined)?.conversation_id };
  const conversationId = conversationIdOf(body, headers);
  return { body: withConversationParams(body, conversationId), conversationId };
}

/** The request's conversation id as TensorRT-LLM's serve edge records it, in `conversation_params` (the client's other keys kept). */
function withConversationParams(body: Body, conversationId: string | undefined): Body {
  if (conversationId === undefined) return body;
  const own = body.conversation_params;
  const params = typeof own === 'object' && own !== null && !Array.isArray(own) ? (own as Body) : {};
  if (params.conversation_id === conversationId) return body;
  return { ...body, conversation_params: { ...params, conversation_id: conversationId } };
}

/**
 * The body as a worker gets it: the prompt as the token ids a router computed (so the worker
 * skips tokenizing it again, where the kind allows it) and the kind's fixed members.
 */
export function withPromptTokens(kind: RequestKind, body: Body, ids: TokenIds | undefined): Body {
  const { routerIdsKey: key, workerFields } = protocolOf(kind);
  // Ids the client sent itself are in the body already: no copy of it.
  const withIds = !ids || key === undefined || ids === body[key] ? body : { ...body, [key]: ids };
  return workerFields ? { ...withIds, ...workerFields } : withIds;
}

/** A client's own disaggregated_params must not reach a server doing the whole request. */
export function stripContextOnly(body: Body): Body {
  const params = body.disaggregated_params as Body | undefined;
  if (!params || params.request_type !== 'context_only') return body;
  const { disaggregated_params: _dropped, ...rest } = body;
  return rest;
}

/** See docs/protocol.md "Two-phase request": the context_only request, never streamed. */
export function contextRequestBody(kind: RequestKind, body: Body, tokenIds: TokenIds | undefined, disaggId: number, conversationId: unknown): Body {
  return {
    ...withPromptTokens(kind, body, tokenIds),
    stream: false,
    stream_options: null,
    disaggregated_params: {
      request_type: 'context_only',
      disagg_request_id: disaggId,
      ...(conversationId !== undefined ? { conversation_id: conversationId } : {}),
    },
  };
}

/**
 * The generation request's disaggregated_params: the context answer's turned generation_only,
 * under the attempt's disagg_request_id, with the request's conversation id.
 */
export function generationParams(ctx: ContextAnswerOk, disaggId: number, conversationId: unknown): Body {
  const params = { ...(ctx.choice.disaggregated_params as Body) };
  params.request_type = 'generation_only';
  params.disagg_request_id = disaggId;
  if (conversationId !== undefined) params.conversation_id = conversationId;
  return params;
}

/** The body with another disagg_request_id (a retry's), or as it is when it names none or this one. */
export function withDisaggRequestId(body: Body, disaggId: number): Body {
  const params = body.disaggregated_params as Body | undefined;
  if (params?.disagg_request_id === undefined || params.disagg_request_id === disaggId) return body;
  return { ...body, disaggregated_params: { ...params, disagg_request_id: disaggId } };
}

/**
 * TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: no context phase; the generation request carries the
 * params TensorRT-LLM hard-codes for it (first token 7, context request 1) and ignore_eos, so
 * a generation worker in the same mode generates max_tokens from a prompt it never received.
 */
export function benchmarkGenerationBody(body: Body): Body {
  return {
    ...body,
    ignore_eos: true,
    disaggregated_params: { request_type: 'generation_only', first_gen_tokens: [7], ctx_request_id: 1, encoded_opaque_state: null, draft_tokens: null },
  };
}

/**
 * See docs/protocol.md "Generation request": the client's request with the context answer's
 * disaggregated_params (turned generation_only) and, when it echoed them, the prompt's ids,
 * spliced in as the text they came as (no parse and re-stringify of the bulk of the body).
 */
export function generationRequestText(kind: RequestKind, body: Body, ctx: ContextAnswerOk, params: Body): JsonBodyText {
  const idsKey = protocolOf(kind).relayIdsKey;
  const fixed = generationMembers(kind, ctx, params);
  let text: JsonBodyText;
  if (ctx.promptIdsText === undefined) text = serializeRequestText({ ...body, ...fixed });
  else {
    const { [idsKey]: _replaced, ...rest } = body;
    // The ids go in as the last member.
    text = serializeRequestText({ ...rest, ...fixed }, { key: idsKey, text: ctx.promptIdsText });
  }
  // The last body that holds the client's members: their remembered text goes now, not with the request.
  forgetMemberTexts(body);
  return text;
}

/** The generation request as an object, for a msgpack worker: the echoed ids as numbers. */
export function generationRequestObject(kind: RequestKind, body: Body, ctx: ContextAnswerOk, params: Body): Body {
  const out: Body = { ...body, ...generationMembers(kind, ctx, params) };
  if (ctx.promptIdsText !== undefined) out[protocolOf(kind).relayIdsKey] = JSON.parse(ctx.promptIdsText) as number[];
  return out;
}

/**
 * The generation request in the encoding of the server it goes to (see WorkerBody), carrying
 * `params` (see generationParams).
 */
export function generationRequest(kind: RequestKind, body: Body, ctx: ContextAnswerOk, params: Body): WorkerBody {
  return new WorkerBody(() => generationRequestObject(kind, body, ctx, params), () => generationRequestText(kind, body, ctx, params));
}

/** What a generation body carries beyond the client's: the kind's fixed members, relayed base64 ids, the params. */
function generationMembers(kind: RequestKind, ctx: ContextAnswerOk, params: Body): Body {
  const protocol = protocolOf(kind);
  const b64 = ctx.json.prompt_token_ids_b64;
  return {
    ...protocol.workerFields,
    ...(protocol.relaysIdsB64 && typeof b64 === 'string' ? { prompt_token_ids_b64: b64 } : {}),
    disaggregated_params: params,
  };
}

/**
 * schedule_style generation_first: the generation request goes out together with the context
 * request instead of after its answer. It cannot carry the context answer's params, so it
 * names the context request by id (ctx_request_id = disagg_request_id) and carries the chosen
 * context server's `server_info.disaggregated_params` (where to fetch the KV cache from).
 */
export function generationFirstBodies(
  body: Body,
  disaggId: number,
  conversationId: unknown,
  ctxServerInfo: Body | undefined,
): { context: Body; generation: Body } {
  const common = {
    disagg_request_id: disaggId,
    schedule_style: GENERATION_FIRST,
    ...(conversationId !== undefined ? { conversation_id: conversationId } : {}),
  };
  const context = { ...body, stream: false, stream_options: null, disaggregated_params: { request_type: 'context_only', ...common } };
  const fromServer = { ...((ctxServerInfo?.disaggregated_params as Body | undefined) ?? {}) };
  // Workers list their endpoints; a request names one.
  if (Array.isArray(fromServer.ctx_info_endpoint)) fromServer.ctx_info_endpoint = fromServer.ctx_info_endpoint[0];
  const generation = {
    ...body,
    disaggregated_params: { request_type: 'generation_only', ctx_request_id: disaggId, ...common, ...fromServer, disagg_request_id: disaggId },
  };
  return { context, generation };
}

/**
 * See docs/protocol.md "Context answer": the shape a context_only answer must have before its
 * parameters go to a generation server, as TensorRT-LLM checks it: a JSON object with exactly
 * one choice (Responses: the answer itself carries them), and the transfer parameters unless
 * the finish reason says the request is already finished. A missing finish reason is not
 * "finished": such an answer would otherwise be relayed as a complete (and empty) answer.
 */
export interface ContextAnswerOk {
  ok: true;
  /** The answer without its prompt_token_ids when they were cut out (see promptIdsText). */
  json: Body;
  /** What carries the handoff: choices[0], or the answer itself for Responses. */
  choice: Body;
  finished: boolean;
  /** The top-level prompt_token_ids as the worker wrote them: a non-empty list of integers. */
  promptIdsText: string | undefined;
}
export type ContextAnswer = ContextAnswerOk | { ok: false; problem: string };

export function parseContextAnswer(text: string, kind: RequestKind = 'completion'): ContextAnswer {
  // The ids stay text: they are only spliced into the generation body (and a client's answer).
  const cut = cutIdList(text, 'prompt_token_ids');
  const marked = cut && parseAroundCut(cut.before, cut.after, 'prompt_token_ids');
  let json: Body | undefined;
  let promptIdsText: string | undefined;
  if (marked) {
    json = marked;
    promptIdsText = cut.ids;
    delete json.prompt_token_ids;
  } else {
    // No list, or not the top-level member's: parsed whole, as sent.
    json = parseJsonObject(text);
  }
  if (!json) return { ok: false, problem: 'an answer that is not a JSON object' };
  const c = protocolOf(kind).handoffOf(json);
  if (typeof c === 'string') return { ok: false, problem: c };
  const finished = finishedByContext(c);
  if (!finished && (typeof c.disaggregated_params !== 'object' || c.disaggregated_params === null || Array.isArray(c.disaggregated_params))) {
    return { ok: false, problem: `a context answer without disaggregated_params (finish_reason ${JSON.stringify(c.finish_reason ?? null)})` };
  }
  const ids = json.prompt_token_ids;
  // Ids parsed with the rest (an unusual layout) are passed on the same way.
  if (promptIdsText === undefined && Array.isArray(ids) && ids.length) promptIdsText = JSON.stringify(ids);
  return { ok: true, json, choice: c, finished, promptIdsText };
}

/** The answer as the worker sent it (prompt_token_ids included), for a client. */
export function wholeContextAnswer(answer: ContextAnswerOk): Body {
  if (answer.promptIdsText === undefined || 'prompt_token_ids' in answer.json) return answer.json;
  return { ...answer.json, prompt_token_ids: JSON.parse(answer.promptIdsText) as unknown };
}

/**
 * A finished context answer as its client gets it: without the handoff, which describes a KV
 * transfer that never happens (see docs/protocol.md "Context answer").
 */
export function finishedContextAnswer(kind: RequestKind, answer: ContextAnswerOk): Body {
  delete answer.choice.disaggregated_params;
  const dropped = protocolOf(kind).handoffFields;
  if (dropped.length === 0) return wholeContextAnswer(answer);
  const json = answer.json;
  for (const key of dropped) delete json[key];
  return json;
}

/** Any finish reason but `length` and `not_finished` means nothing is left to generate. */
export function finishedByContext(choice: Body): boolean {
  const reason = choice.finish_reason;
  return typeof reason === 'string' && reason !== 'length' && reason !== 'not_finished';
}

export function parseJsonObject(text: string): Body | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Body) : undefined;
  } catch {
    return undefined;
  }
}
