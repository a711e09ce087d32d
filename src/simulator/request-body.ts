import { decode } from '@msgpack/msgpack';
import type * as http from 'node:http';
import { errorBody } from './openai-response';

/**
 * A generation request's body as a worker reads it (docs/protocol.md "Body encoding"): msgpack
 * when flagged `X-TRTLLM-Msgpack: 1` and the worker decodes it (the newest TensorRT-LLM), JSON
 * otherwise. An older worker parses a flagged body as JSON too, and FastAPI answers bytes that
 * are not UTF-8 (every msgpack map) with 400 "There was an error parsing the body".
 */
export type DecodedBody =
  | { ok: true; body: unknown; encoding: 'json' | 'msgpack' }
  | { ok: false; status: 400; answer: string };

const UTF8 = new TextDecoder('utf-8', { fatal: true });

export function decodeRequestBody(req: http.IncomingMessage, bytes: Buffer, readsMsgpack: boolean): DecodedBody {
  if (readsMsgpack && req.headers['x-trtllm-msgpack'] === '1') {
    try {
      return { ok: true, body: decode(bytes), encoding: 'msgpack' };
    } catch (err) {
      return { ok: false, status: 400, answer: errorBody(`request body is not valid msgpack: ${(err as Error).message}`, 400) };
    }
  }
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return { ok: false, status: 400, answer: JSON.stringify({ detail: 'There was an error parsing the body' }) };
  }
  try {
    return { ok: true, body: JSON.parse(text) as unknown, encoding: 'json' };
  } catch {
    return { ok: false, status: 400, answer: errorBody('request body is not valid JSON', 400) };
  }
}
