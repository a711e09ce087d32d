import type { Dispatcher } from 'undici';
import { AnswerTooLargeError, readBoundedBody } from '../http-session';

export { AnswerTooLargeError };

const MIB = 1024 * 1024;
/** Without a configured limit, no answer may exceed this whatever the request asks for. */
export const DEFAULT_ANSWER_CEILING = 64 * MIB;
/** Room per generated token when the request asks for logprobs or logits (with their alternatives). */
const BYTES_PER_TOKEN_WITH_SCORES = 2048;
/**
 * Room per generated token otherwise: its text (the longest vocabulary entries, JSON-escaped) and
 * its id. Every concurrent answer may be buffered up to its limit, and the allocator keeps the
 * peak for reuse afterwards (README "Limits"), so the room follows what the request can produce.
 */
const BYTES_PER_TOKEN = 256;
const DEFAULT_MAX_TOKENS = 16_384;

/**
 * The largest answer accepted for a request: the configured limit, or one sized generously
 * from the request (its prompt may be echoed back as token ids, and `n` answers of
 * `max_tokens` tokens each, with logprobs or logits when asked for), never above
 * DEFAULT_ANSWER_CEILING.
 */
export function answerLimitFor(configured: number | undefined, requestBytes: number, body: Record<string, unknown>): number {
  if (configured) return configured;
  const maxTokens = typeof body.max_tokens === 'number' && body.max_tokens > 0 ? body.max_tokens : DEFAULT_MAX_TOKENS;
  const n = typeof body.n === 'number' && body.n > 1 ? body.n : 1;
  const perToken = asksForScores(body) ? BYTES_PER_TOKEN_WITH_SCORES : BYTES_PER_TOKEN;
  return Math.min(DEFAULT_ANSWER_CEILING, 2 * MIB + 8 * requestBytes + n * maxTokens * perToken);
}

/**
 * Whether the request asks for per-token scores: `logprobs`, `top_logprobs`, and TensorRT-LLM's
 * `prompt_logprobs` and `return_*_logits` extensions (any set key naming logprobs or logits).
 */
function asksForScores(body: Record<string, unknown>): boolean {
  for (const [key, value] of Object.entries(body)) {
    if ((key.includes('logprob') || key.includes('logits')) && value !== false && value !== null && value !== 0 && value !== undefined) return true;
  }
  return false;
}

/** The whole body as text, within `limit` bytes (see readBoundedBody). */
export async function readAnswerText(res: Dispatcher.ResponseData, limit: number): Promise<string> {
  return (await readBoundedBody(res.body, res.headers['content-length'], limit)).toString('utf8');
}
