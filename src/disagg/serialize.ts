import { HttpApiError } from '../common';
import { idListTextOf, PROMPT_ID_MEMBERS } from '../common/id-list-text';

/**
 * JSON.stringify of a client's request body. A body the router cannot serialise (nested too
 * deeply for the stack) is the client's fault: a 400, never a failure of the server it was
 * meant for.
 */
export function serializeRequest(value: unknown): string {
  try {
    return withSplicedIds(value) ?? JSON.stringify(value);
  } catch {
    throw new HttpApiError(400, 'the request body cannot be forwarded: it is nested too deeply', { code: 'invalid_body' });
  }
}

/** The body's text with its remembered id list written as it came (last member), if it has one (README "Worker body encoding"). */
function withSplicedIds(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const body = value as Record<string, unknown>;
  for (const key of PROMPT_ID_MEMBERS) {
    const ids = idListTextOf(body[key]);
    if (ids === undefined) continue;
    const { [key]: _spliced, ...rest } = body;
    const text = JSON.stringify(rest);
    return text === '{}' ? `{"${key}":${ids}}` : `${text.slice(0, -1)},"${key}":${ids}}`;
  }
  return undefined;
}
