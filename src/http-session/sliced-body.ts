import { Readable } from 'node:stream';

/** A text body at least this long (characters) is written to the socket in slices. */
export const SLICED_BODY_CHARS = 256 * 1024;
/** Characters per slice: one slice is well under a millisecond of UTF-8 encoding. */
export const BODY_SLICE_CHARS = 64 * 1024;

/**
 * A long text body as slices the socket encodes as it drains, with its byte length for the
 * Content-Length. Encoded whole, a 16 MB body is one Buffer and ~100 ms of the event loop in
 * one go (twice a request: context and generation), while every other request waits (README
 * "Worker body encoding"); in slices, other requests get turns in between. A slice never ends
 * between the two halves of a surrogate pair (each half alone would be written as U+FFFD, and
 * the bytes would no longer be the text's).
 */
export function slicedBody(text: string): { byteLength: number; slices: Readable } {
  return { byteLength: Buffer.byteLength(text, 'utf8'), slices: Readable.from(slicesOf(text)) };
}

async function* slicesOf(text: string): AsyncGenerator<string> {
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + BODY_SLICE_CHARS, text.length);
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    yield text.slice(at, end);
    at = end;
  }
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
