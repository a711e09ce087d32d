import { HttpApiError } from '../common';

/**
 * JSON.stringify of a client's request body. A body the router cannot serialise (nested too
 * deeply for the stack) is the client's fault: a 400, never a failure of the server it was
 * meant for.
 */
export function serializeRequest(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    throw new HttpApiError(400, 'the request body cannot be forwarded: it is nested too deeply', { code: 'invalid_body' });
  }
}
