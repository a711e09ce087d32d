import { ChatMessage, responsesAsChat, TextTokenizer } from '../tokenizer';
import { RequestType } from './faults';

export type GenerationEndpoint = 'completions' | 'chat' | 'responses';

/** `disaggregated_params` of a request, as TensorRT-LLM's OpenAI server accepts it. */
export interface DisaggregatedParams {
  request_type: 'context_only' | 'generation_only' | 'context_and_generation';
  first_gen_tokens?: number[] | null;
  ctx_request_id?: number | null;
  encoded_opaque_state?: string | null;
  draft_tokens?: number[] | null;
  disagg_request_id?: number | string | null;
  [key: string]: unknown;
}

export interface SimRequest {
  endpoint: GenerationEndpoint;
  type: RequestType;
  model: string | undefined;
  /** One token list per prompt (chat: exactly one). */
  prompts: number[][];
  stream: boolean;
  includeUsage: boolean;
  maxTokens: number;
  stop: string[];
  disagg: DisaggregatedParams | undefined;
  /** `cache_salt`: the request's KV cache namespace (no reuse across salts). */
  cacheSalt: string | undefined;
}

/** A request the worker refuses with 400 and an OpenAI-style error body. */
export class BadRequestError extends Error {
  override readonly name = 'BadRequestError';
}

type Body = Record<string, unknown>;

export function parseSimRequest(
  endpoint: GenerationEndpoint,
  body: unknown,
  tokenizer: TextTokenizer,
  defaultMaxTokens: number,
): SimRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestError('request body must be a JSON object');
  }
  const b = body as Body;
  const disagg = parseDisagg(b.disaggregated_params);
  const type: RequestType =
    disagg?.request_type === 'context_only'
      ? 'context_only'
      : disagg?.request_type === 'generation_only'
        ? 'generation_only'
        : 'plain';
  const prompts =
    endpoint === 'chat' ? [chatPrompt(b, tokenizer)] : endpoint === 'responses' ? [responsesPrompt(b, tokenizer)] : completionPrompts(b.prompt, tokenizer);
  if (type !== 'plain' && prompts.length !== 1) {
    throw new BadRequestError('disaggregated requests take exactly one prompt');
  }
  const maxRaw = endpoint === 'responses' ? b.max_output_tokens : (b.max_tokens ?? b.max_completion_tokens);
  const maxTokens = maxRaw == null ? defaultMaxTokens : Number(maxRaw);
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new BadRequestError(`max_tokens must be a positive integer, got ${String(maxRaw)}`);
  }
  const streamOptions = b.stream_options as Body | null | undefined;
  if (b.cache_salt != null && (typeof b.cache_salt !== 'string' || b.cache_salt.length === 0)) {
    throw new BadRequestError('cache_salt must be a non-empty string');
  }
  return {
    endpoint,
    type,
    model: typeof b.model === 'string' ? b.model : undefined,
    prompts,
    stream: b.stream === true,
    includeUsage: typeof streamOptions === 'object' && streamOptions !== null && streamOptions.include_usage === true,
    maxTokens,
    stop: parseStop(b.stop),
    disagg,
    cacheSalt: typeof b.cache_salt === 'string' ? b.cache_salt : undefined,
  };
}

function parseDisagg(raw: unknown): DisaggregatedParams | undefined {
  if (raw == null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new BadRequestError('disaggregated_params must be an object');
  const d = raw as DisaggregatedParams;
  if (!['context_only', 'generation_only', 'context_and_generation'].includes(d.request_type)) {
    throw new BadRequestError(`unknown disaggregated_params.request_type: ${String(d.request_type)}`);
  }
  if (d.request_type === 'generation_only') {
    if (d.ctx_request_id == null || typeof d.ctx_request_id !== 'number') {
      throw new BadRequestError('generation_only requests need disaggregated_params.ctx_request_id');
    }
    if (d.first_gen_tokens != null && !isTokenList(d.first_gen_tokens)) {
      throw new BadRequestError('disaggregated_params.first_gen_tokens must be a list of token ids');
    }
  }
  return d;
}

function completionPrompts(prompt: unknown, tokenizer: TextTokenizer): number[][] {
  if (typeof prompt === 'string') return [tokenizer.encode(prompt)];
  if (Array.isArray(prompt) && prompt.length > 0) {
    if (isTokenList(prompt)) return [prompt];
    if (prompt.every((p) => typeof p === 'string')) return (prompt as string[]).map((p) => tokenizer.encode(p));
    if (prompt.every((p) => Array.isArray(p) && p.length > 0 && isTokenList(p))) return prompt as number[][];
  }
  throw new BadRequestError('prompt must be a string, a list of strings, a list of token ids or a list of such lists');
}

function chatPrompt(b: Body, tokenizer: TextTokenizer): number[] {
  const ids = b.prompt_token_ids;
  if (ids != null) {
    if (Array.isArray(ids) && ids.length > 0 && isTokenList(ids)) return ids;
    throw new BadRequestError('prompt_token_ids must be a non-empty list of token ids');
  }
  const messages = b.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw new BadRequestError('messages must be a non-empty list');
  for (const m of messages) {
    if (typeof m !== 'object' || m === null || typeof (m as Body).role !== 'string') {
      throw new BadRequestError('each message needs a role');
    }
  }
  return tokenizer.encodeChat(messages as ChatMessage[]);
}

/**
 * A Responses request's prompt: the ids the orchestrator relayed (`prompt_token_ids`, or
 * `prompt_token_ids_b64` as little-endian int32) used as they are, else its input as a chat.
 */
function responsesPrompt(b: Body, tokenizer: TextTokenizer): number[] {
  if (typeof b.prompt_token_ids_b64 === 'string') {
    const bytes = Buffer.from(b.prompt_token_ids_b64, 'base64');
    if (bytes.length === 0 || bytes.length % 4 !== 0) throw new BadRequestError('prompt_token_ids_b64 must hold int32 token ids');
    const ids: number[] = [];
    for (let i = 0; i < bytes.length; i += 4) ids.push(bytes.readInt32LE(i));
    return ids;
  }
  if (b.prompt_token_ids != null) return chatPrompt(b, tokenizer);
  if (b.input == null || (typeof b.input !== 'string' && !Array.isArray(b.input))) throw new BadRequestError('input must be a string or a list of items');
  const chat = responsesAsChat(b);
  return chatPrompt(chat, tokenizer);
}

function parseStop(stop: unknown): string[] {
  if (stop == null) return [];
  if (typeof stop === 'string') return stop ? [stop] : [];
  if (Array.isArray(stop) && stop.every((s) => typeof s === 'string')) return (stop as string[]).filter((s) => s);
  throw new BadRequestError('stop must be a string or a list of strings');
}

function isTokenList(v: unknown[]): v is number[] {
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) return false;
  }
  return true;
}
