import type { TextParts } from '../http-session';
import type { WorkerBody } from './worker-body';

export type BodyEncoding = 'json' | 'msgpack';

/** TensorRT-LLM's flag of a msgpack body; Content-Type stays application/json (docs/protocol.md "Body encoding"). */
export const MSGPACK_HEADER = 'x-trtllm-msgpack';

/** How one call's body is written: chosen per server (see WorkerBodyEncodings). */
export interface WorkerBodyEncoder {
  readonly encoding: BodyEncoding;
  encode(body: WorkerBody): string | Uint8Array | TextParts;
  /** The call's headers: the request's own plus what this encoding announces. */
  headers(base: Record<string, string>): Record<string, string>;
}

export const JSON_BODY: WorkerBodyEncoder = {
  encoding: 'json',
  encode: (body) => body.json,
  headers: (base) => base,
};

export const MSGPACK_BODY: WorkerBodyEncoder = {
  encoding: 'msgpack',
  encode: (body) => body.msgpack,
  headers: (base) => ({ ...base, [MSGPACK_HEADER]: '1' }),
};

/** The statuses a worker answers a body it could not parse with (FastAPI: 400 or 422; others 415). */
export const UNPARSED_STATUSES: ReadonlySet<number> = new Set([400, 415, 422]);
/**
 * What those answers say when the bytes could not be read at all, as opposed to a request the
 * worker read and refused: FastAPI's "There was an error parsing the body" (a body that is not
 * UTF-8, as every msgpack map is) and its json_invalid / "JSON decode error" (pydantic 2) or
 * "Expecting value" (pydantic 1) validation errors.
 */
const UNPARSED_TEXT = /error parsing the body|json_invalid|JSON decode error|jsondecode|Expecting value|not valid JSON|Unsupported Media Type/i;

/** An answer to a msgpack body that says the worker reads only JSON (docs/protocol.md "Body encoding"). */
export function refusesMsgpack(status: number, text: string): boolean {
  return status === 415 || (UNPARSED_STATUSES.has(status) && UNPARSED_TEXT.test(text));
}
