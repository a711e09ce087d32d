import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { AnswerTooLargeError } from '../http-session';

/**
 * An answer's text as it arrives, within `limit` bytes: `next` decodes the next chunk read
 * (undefined at the end), `whole` decodes all of it once it has ended. A reader that parses
 * as the chunks come never holds the text whole, which for a 63 MB KV drain would cost about
 * 0.4 s of copying and decoding in one go (README "KV block tables"). Past `limit` the read is
 * aborted (the connection closed) and both throw AnswerTooLargeError.
 */
export class ArrivingText {
  /** Every chunk read, for `whole`. */
  private readonly chunks: Buffer[] = [];
  private readonly decoder = new StringDecoder('utf8');
  private size = 0;
  /** The next chunk `next` decodes. */
  private nextChunk = 0;
  private ended = false;
  private decoderEnded = false;
  private error?: Error;
  private wake?: () => void;

  constructor(body: Readable, limit: number) {
    body.on('data', (chunk: Buffer) => {
      this.size += chunk.length;
      if (this.size > limit) {
        this.chunks.length = 0;
        body.destroy(new AnswerTooLargeError(limit));
        return;
      }
      this.chunks.push(chunk);
      this.wake?.();
    });
    body.once('end', () => {
      this.ended = true;
      this.wake?.();
    });
    body.once('error', (err: Error) => {
      this.error = err;
      this.wake?.();
    });
  }

  async next(): Promise<string | undefined> {
    for (;;) {
      if (this.error) throw this.error;
      if (this.nextChunk < this.chunks.length) return this.decoder.write(this.chunks[this.nextChunk++]);
      if (this.ended) {
        if (this.decoderEnded) return undefined;
        this.decoderEnded = true;
        return this.decoder.end();
      }
      await this.arrival();
    }
  }

  async whole(): Promise<string> {
    while (!this.ended && !this.error) await this.arrival();
    if (this.error) throw this.error;
    return (this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size)).toString('utf8');
  }

  private arrival(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
    });
  }
}
