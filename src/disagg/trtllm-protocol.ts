import type { RequestKind } from '../routing';

/**
 * The disaggregated wire protocol of TensorRT-LLM's workers: the bodies the router sends
 * (context_only, generation_only) and the checks on what the context phase answers.
 */

/** TensorRT-LLM's DisaggScheduleStyle.GENERATION_FIRST, as workers read it. */
export const GENERATION_FIRST = 1;

type Body = Record<string, unknown>;

export function conversationIdOf(body: Body): unknown {
  return (body.disaggregated_params as Body | undefined)?.conversation_id;
}

/** The prompt as the token ids a router computed, so workers skip tokenizing it again. */
export function withPromptTokens(kind: RequestKind, body: Body, ids: number[] | undefined): Body {
  // Ids the client sent itself are in the body already: no copy of it.
  if (!ids || ids === (kind === 'completion' ? body.prompt : body.prompt_token_ids)) return body;
  return kind === 'completion' ? { ...body, prompt: ids } : { ...body, prompt_token_ids: ids };
}

/** A client's own disaggregated_params must not reach a server doing the whole request. */
export function stripContextOnly(body: Body): Body {
  const params = body.disaggregated_params as Body | undefined;
  if (!params || params.request_type !== 'context_only') return body;
  const { disaggregated_params: _dropped, ...rest } = body;
  return rest;
}

/** See docs/protocol.md "Two-phase request": the context_only request, never streamed. */
export function contextRequestBody(kind: RequestKind, body: Body, tokenIds: number[] | undefined, disaggId: number): Body {
  const conversationId = conversationIdOf(body);
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
 * See docs/protocol.md "Generation request": the client's request with the context answer's
 * disaggregated_params (turned generation_only) and, when it echoed them, the prompt's ids.
 */
export function generationRequestBody(kind: RequestKind, body: Body, ctx: Body, disaggId: number): Body {
  const choice = (ctx.choices as Body[])[0];
  const params = { ...(choice.disaggregated_params as Body) };
  params.request_type = 'generation_only';
  params.disagg_request_id = disaggId;
  const conversationId = conversationIdOf(body);
  if (conversationId !== undefined) params.conversation_id = conversationId;
  const gen: Body = { ...body, disaggregated_params: params };
  const ids = ctx.prompt_token_ids;
  if (Array.isArray(ids) && ids.length) {
    if (kind === 'completion') gen.prompt = ids;
    else gen.prompt_token_ids = ids;
  }
  return gen;
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
 * one choice, and the transfer parameters unless the finish reason says the request is
 * already finished. A missing finish reason is not "finished": such an answer would otherwise
 * be relayed as a complete (and empty) answer.
 */
export type ContextAnswer =
  | { ok: true; json: Body; choice: Body; finished: boolean }
  | { ok: false; problem: string };

export function parseContextAnswer(text: string): ContextAnswer {
  const json = parseJsonObject(text);
  if (!json) return { ok: false, problem: 'an answer that is not a JSON object' };
  const choices = json.choices;
  if (!Array.isArray(choices)) return { ok: false, problem: 'a context answer without choices' };
  if (choices.length !== 1) return { ok: false, problem: `a context answer with ${choices.length} choices (expected 1)` };
  const choice = choices[0] as unknown;
  if (typeof choice !== 'object' || choice === null || Array.isArray(choice)) return { ok: false, problem: 'a context answer whose choice is not an object' };
  const c = choice as Body;
  const finished = finishedByContext(c);
  if (!finished && (typeof c.disaggregated_params !== 'object' || c.disaggregated_params === null || Array.isArray(c.disaggregated_params))) {
    return { ok: false, problem: `a context answer without disaggregated_params (finish_reason ${JSON.stringify(c.finish_reason ?? null)})` };
  }
  return { ok: true, json, choice: c, finished };
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
