import { Encoder } from '@msgpack/msgpack';
import { HttpApiError } from '../common';
import { TokenIdArray } from '../common/token-id-array';

/**
 * A worker body as msgpack, the way TensorRT-LLM's newest disaggregated server sends it (see
 * docs/protocol.md "Body encoding"). @msgpack/msgpack writes every safe integer as a msgpack
 * integer, as msgspec does: ids of 2^32 and more (disagg_request_id is at least 2^40) stay
 * integers for the worker, where msgpackr would write them as float64 (README "Worker body
 * encoding" has the measurements). Keys whose value is undefined are left out, as in JSON.
 */
const encoder = new Encoder({ ignoreUndefined: true, maxDepth: Number.MAX_SAFE_INTEGER });

export function packBody(value: Record<string, unknown>): Uint8Array {
  try {
    return encoder.encode(withIdLists(value));
  } catch {
    // As for JSON text: a body nested too deeply for the stack is the client's fault.
    throw new HttpApiError(400, 'the request body cannot be forwarded: it is nested too deeply', { code: 'invalid_body' });
  }
}

/** The body with the router's typed id lists as plain lists: msgpack would write a typed array as binary. */
function withIdLists(value: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const member = value[key];
    if (member instanceof TokenIdArray) (out ??= { ...value })[key] = member.toJSON();
  }
  return out ?? value;
}
