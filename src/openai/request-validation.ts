import { allTokenIds } from '../common/id-list-text';
import { isRecord } from '../common/is-record';
import type { RequestKind } from '../routing';
import { invalidRequest } from '../common';

/**
 * Checks what the router itself relies on, without copying the body: everything else is
 * passed to the workers untouched (they accept many extensions and validate the rest).
 */
export function validateOpenAiRequest(kind: RequestKind, body: unknown): Record<string, unknown> {
  const b = objectWithModel(body);
  if (kind === 'completion') checkPrompt(b.prompt);
  else checkMessages(b.messages);
  optional(b, 'stream', 'boolean');
  optional(b, 'max_tokens', 'integer');
  optional(b, 'n', 'integer');
  optional(b, 'temperature', 'number');
  optional(b, 'top_p', 'number');
  if (b.stream_options !== undefined && b.stream_options !== null && !isPlainObject(b.stream_options)) {
    throw invalidRequest("'stream_options' must be an object", 'stream_options', 'invalid_type');
  }
  if (b.stop !== undefined && b.stop !== null && typeof b.stop !== 'string' && !isStringArray(b.stop)) {
    throw invalidRequest("'stop' must be a string or an array of strings", 'stop', 'invalid_type');
  }
  if (b.disaggregated_params !== undefined && b.disaggregated_params !== null && !isPlainObject(b.disaggregated_params)) {
    throw invalidRequest("'disaggregated_params' must be an object", 'disaggregated_params', 'invalid_type');
  }
  return b;
}

/** A JSON object body with a non-empty string `model`, as every OpenAI route needs. */
export function objectWithModel(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('the request body must be a JSON object', null, 'invalid_body');
  }
  const b = body as Record<string, unknown>;
  if (b.model === undefined || b.model === null) throw invalidRequest("'model' is required", 'model', 'missing_required_parameter');
  if (typeof b.model !== 'string' || b.model.length === 0) throw invalidRequest("'model' must be a non-empty string", 'model', 'invalid_type');
  return b;
}

function checkPrompt(prompt: unknown): void {
  if (prompt === undefined || prompt === null) throw invalidRequest("'prompt' is required", 'prompt', 'missing_required_parameter');
  if (typeof prompt === 'string') {
    if (prompt.length === 0) throw invalidRequest("'prompt' must not be empty", 'prompt');
    return;
  }
  if (Array.isArray(prompt)) {
    if (prompt.length === 0) throw invalidRequest("'prompt' must not be empty", 'prompt');
    if (allTokenIds(prompt)) return;
    // As trtllm-serve disaggregated: a single prompt per request, text or token ids.
    if (prompt.length === 1 && ((typeof prompt[0] === 'string' && prompt[0].length > 0) || (Array.isArray(prompt[0]) && prompt[0].length > 0 && allTokenIds(prompt[0])))) return;
    throw invalidRequest("'prompt' must be one string or one list of token ids (batched prompts are not supported)", 'prompt', 'invalid_type');
  }
  throw invalidRequest("'prompt' must be a string or a list of token ids", 'prompt', 'invalid_type');
}

function checkMessages(messages: unknown): void {
  if (messages === undefined || messages === null) throw invalidRequest("'messages' is required", 'messages', 'missing_required_parameter');
  if (!Array.isArray(messages)) throw invalidRequest("'messages' must be an array", 'messages', 'invalid_type');
  if (messages.length === 0) throw invalidRequest("'messages' must not be empty", 'messages');
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as unknown;
    if (!isPlainObject(m) || typeof m.role !== 'string') {
      throw invalidRequest(`'messages[${i}]' must be an object with a string 'role'`, `messages[${i}]`, 'invalid_type');
    }
  }
}

export function optional(b: Record<string, unknown>, key: string, type: 'boolean' | 'integer' | 'number'): void {
  const v = b[key];
  if (v === undefined || v === null) return;
  const ok = type === 'integer' ? Number.isInteger(v) : typeof v === type;
  if (!ok) throw invalidRequest(`'${key}' must be ${type === 'integer' ? 'an integer' : `a ${type}`}`, key, 'invalid_type');
}

function isStringArray(v: unknown): boolean {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

/** A JSON object (common/is-record.ts), under the name the validators use. */
export const isPlainObject = isRecord;
