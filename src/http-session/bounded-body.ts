import type { Readable } from 'node:stream';

/** An answer grew past its limit: the read was aborted (and its connection closed). */
export class AnswerTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`answer larger than ${limitBytes} bytes`);
    this.name = 'AnswerTooLargeError';
  }
}

/**
 * A whole answer body as bytes, aborted with AnswerTooLargeError once it passes `limit` bytes
 * (or at once when its content-length says it will), so a hostile answer never sits in memory.
 */
export function readBoundedBody(body: Readable, contentLength: string | string[] | undefined, limit: number): Promise<Buffer> {
  const declared = Number(Array.isArray(contentLength) ? contentLength[0] : contentLength);
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
    body.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    body.once('error', reject);
  });
}
