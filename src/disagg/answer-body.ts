import type { Dispatcher } from 'undici';

/** A worker's answer grew past the limit: the read was aborted (and its connection closed). */
export class AnswerTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`answer larger than ${limitBytes} bytes`);
    this.name = 'AnswerTooLargeError';
  }
}

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

/**
 * The whole body as text, aborted with AnswerTooLargeError once it passes `limit` bytes (or
 * at once when its content-length says it will), so a hostile answer never sits in memory.
 */
export function readAnswerText(res: Dispatcher.ResponseData, limit: number): Promise<string> {
  const body = res.body;
  const declared = Number(res.headers['content-length']);
  if (declared > limit) {
    body.destroy();
    return Promise.reject(new AnswerTooLargeError(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        body.destroy(new AnswerTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    });
    body.once('end', () => resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks, size).toString('utf8')));
    body.once('error', reject);
  });
}
