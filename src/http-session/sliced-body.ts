import { Readable } from 'node:stream';

/** A text body at least this long (characters) is written to the socket in slices. */
export const SLICED_BODY_CHARS = 256 * 1024;
/** Characters per slice: one slice is well under a millisecond of UTF-8 encoding. */
export const BODY_SLICE_CHARS = 64 * 1024;

/**
 * A request body as texts to send one after the other, so a long string of the request (a
 * 16 MB prompt) goes out as it is instead of being copied into one JSON text first (README
 * "Worker body encoding"). Its byte length is known up front, for the Content-Length.
 */
export class TextParts {
  /** Characters, all parts together. */
  readonly length: number;
  /** UTF-8 bytes, all parts together. */
  readonly byteLength: number;

  constructor(readonly parts: readonly string[]) {
    let length = 0;
    let bytes = 0;
    for (const part of parts) {
      length += part.length;
      bytes += Buffer.byteLength(part, 'utf8');
    }
    this.length = length;
    this.byteLength = bytes;
  }

  /** The whole text in one string (a copy: for tests, not for sending). */
  toString(): string {
    return this.parts.join('');
  }
}

/**
 * A long body as slices the socket encodes as it drains. Encoded whole, a 16 MB body is one
 * Buffer and ~100 ms of the event loop in one go (twice a request: context and generation),
 * while every other request waits; in slices, other requests get turns in between. A slice
 * never ends between the two halves of a surrogate pair (each half alone would be written as
 * U+FFFD, and the bytes would no longer be the text's). A part never does either: each is a
 * string JSON writes as it is, whose pairs are whole.
 */
export function slicedBody(body: string | TextParts): { byteLength: number; slices: Readable } {
  const parts = typeof body === 'string' ? new TextParts([body]) : body;
  return { byteLength: parts.byteLength, slices: Readable.from(slicesOf(parts.parts)) };
}

async function* slicesOf(parts: readonly string[]): AsyncGenerator<string> {
  for (const text of parts) {
    for (let at = 0; at < text.length; ) {
      let end = Math.min(at + BODY_SLICE_CHARS, text.length);
      if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
      yield text.slice(at, end);
      at = end;
    }
  }
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
