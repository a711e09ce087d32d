import type { Dispatcher } from 'undici';
import { AnswerTooLargeError, readBoundedBody } from '../http-session';

export { AnswerTooLargeError };

const MIB = 1024 * 1024;
/** Without a configured limit, no answer may exceed this whatever the request asks for. */
export const DEFAULT_ANSWER_CEILING = 64 * MIB;
/** Room per generated token (text, logprobs with their alternatives, token ids). */
const BYTES_PER_TOKEN = 2048;
const DEFAULT_MAX_TOKENS = 16_384;

/**
 * The largest answer accepted for a request: the configured limit, or one sized generously
 * from the request (its prompt may be echoed back as token ids, and `n` answers of
 * `max_tokens` tokens each), never above DEFAULT_ANSWER_CEILING.
 */
export function answerLimitFor(configured: number | undefined, requestBytes: number, body: Record<string, unknown>): number {
  if (configured) return configured;
  const maxTokens = typeof body.max_tokens === 'number' && body.max_tokens > 0 ? body.max_tokens : DEFAULT_MAX_TOKENS;
  const n = typeof body.n === 'number' && body.n > 1 ? body.n : 1;
  return Math.min(DEFAULT_ANSWER_CEILING, 2 * MIB + 8 * requestBytes + n * maxTokens * BYTES_PER_TOKEN);
}

/** The whole body as text, within `limit` bytes (see readBoundedBody). */
export async function readAnswerText(res: Dispatcher.ResponseData, limit: number): Promise<string> {
  return (await readBoundedBody(res.body, res.headers['content-length'], limit)).toString('utf8');
}
