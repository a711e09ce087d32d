import { HttpApiError } from '../common';
import { idListTextOf, PROMPT_ID_MEMBERS } from '../common/id-list-text';
import { SLICED_BODY_CHARS, TextParts } from '../http-session';

/**
 * JSON.stringify of a client's request body. A body the router cannot serialise (nested too
 * deeply for the stack) is the client's fault: a 400, never a failure of the server it was
 * meant for.
 */
export function serializeRequest(value: unknown): string {
  return written(() => withSplicedIds(value) ?? JSON.stringify(value));
}

/**
 * The body's JSON text as serializeRequest writes it, or, when a top-level member is a string
 * of SLICED_BODY_CHARS or more that JSON writes as it is, that text in parts with the string
 * itself as one of them (README "Worker body encoding"): JSON.stringify would copy a 16 MB
 * prompt into a new text (escaping it) and the socket would copy that text again to send it,
 * ~120 ms of the event loop per body, twice a request. `last` is a member to put last, written
 * as the text given (an id list spliced in).
 */
export function serializeRequestText(value: Record<string, unknown>, last?: { key: string; text: string }): string | TextParts {
  return written(() => {
    const parts = withLongStrings(value, last);
    if (parts) return parts;
    const text = withSplicedIds(value) ?? JSON.stringify(value);
    // A non-empty object's text ends with '}': the member goes in last.
    if (!last) return text;
    return text === '{}' ? `{"${last.key}":${last.text}}` : `${text.slice(0, -1)},"${last.key}":${last.text}}`;
  });
}

function written<T>(write: () => T): T {
  try {
    return write();
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

/** What JSON would escape in a string: a quote, a backslash, a control character. */
const ESCAPED = /["\\\u0000-\u001f]/;
/** A surrogate without its other half (JSON.stringify writes it as an escape). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether JSON.stringify writes the string as it is, between quotes (about 10 ms for 16 MB of text). */
function writesAsIs(text: string): boolean {
  const wellFormed = (text as { isWellFormed?: () => boolean }).isWellFormed;
  return !ESCAPED.test(text) && (wellFormed ? wellFormed.call(text) : !LONE_SURROGATE.test(text));
}

/**
 * The body member by member, as JSON.stringify orders and writes a plain object, its long
 * strings as parts of their own; remembered id lists (README "Worker body encoding") written
 * as they came. Undefined when no member is such a string.
 */
function withLongStrings(body: Record<string, unknown>, last?: { key: string; text: string }): TextParts | undefined {
  const keys = Object.keys(body);
  const long = new Set(keys.filter((k) => k !== last?.key && typeof body[k] === 'string' && (body[k] as string).length >= SLICED_BODY_CHARS && writesAsIs(body[k] as string)));
  if (long.size === 0) return undefined;
  const parts: string[] = [];
  let text = '{';
  let first = true;
  const member = (key: string, json: string): void => {
    text += `${first ? '' : ','}${JSON.stringify(key)}:${json}`;
    first = false;
  };
  for (const key of keys) {
    if (key === last?.key) continue;
    const value = body[key];
    if (long.has(key)) {
      member(key, '"');
      parts.push(text, value as string);
      text = '"';
      continue;
    }
    const ids = PROMPT_ID_MEMBERS.includes(key) ? idListTextOf(value) : undefined;
    const json = ids ?? (JSON.stringify(value) as string | undefined);
    if (json !== undefined) member(key, json);
  }
  if (last) member(last.key, last.text);
  parts.push(`${text}}`);
  return new TextParts(parts);
}
