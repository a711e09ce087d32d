import { HttpApiError } from '../common';
import { IdListJson, idListJsonOf, idListTextOf, PROMPT_ID_MEMBERS } from '../common/id-list-text';
import { CLOSE_BRACE } from '../common/json-chars';
import { ObjectSlot } from '../common/object-slot';
import { SLICED_BODY_CHARS, TextParts } from '../http-session';

/**
 * JSON.stringify of a client's request body. A body the router cannot serialise (nested too
 * deeply for the stack) is the client's fault: a 400, never a failure of the server it was
 * meant for.
 */
export function serializeRequest(value: unknown): string {
  return written(() => withSplicedIds(value) ?? stringify(value));
}

/**
 * The body's JSON text as serializeRequest writes it, or, when it holds a string of
 * SLICED_BODY_CHARS or more that JSON writes as it is (a prompt, a chat message's content),
 * that text in parts with the string itself as one of them (README "Worker body encoding"): JSON.stringify would copy a 16 MB
 * prompt into a new text (escaping it) and the socket would copy that text again to send it,
 * ~120 ms of the event loop per body, twice a request. `last` is a member to put last, written
 * as the text given (an id list spliced in). A body whose spliced id lists are long comes as
 * its UTF-8 bytes, the lists written straight into them (IdListJson.writeInto): joined into a
 * text, put after the rest and encoded, a 9k-token list was copied three times.
 */
export function serializeRequestText(value: Record<string, unknown>, last?: { key: string; text: string }): JsonBodyText {
  return written(() => {
    const parts = withLongStrings(value, last);
    if (parts) return parts;
    const spliced = splicedIdsOf(value);
    const tail: TailMember[] = spliced ? [{ key: spliced.key, json: spliced.json }] : [];
    if (last) tail.push({ key: last.key, json: last.text });
    const head = stringify(spliced ? spliced.rest : value);
    if (tail.length === 0) return head;
    return tailChars(tail) >= BYTES_TAIL_CHARS ? withTailBytes(head, tail) : withTailText(head, tail);
  });
}

/** A worker body's JSON: text, text in parts (long strings), or its UTF-8 bytes (long id lists). */
export type JsonBodyText = string | TextParts | Buffer;

function written<T>(write: () => T): T {
  try {
    return write();
  } catch {
    throw new HttpApiError(400, 'the request body cannot be forwarded: it is nested too deeply', { code: 'invalid_body' });
  }
}

/** A member written after the rest of the body, as the text given (an id list). */
interface TailMember {
  key: string;
  json: string | IdListJson;
}

/** Members put last this long make the body come as bytes (a list of about 700 ids). */
const BYTES_TAIL_CHARS = 4096;

const tailChars = (tail: readonly TailMember[]): number => tail.reduce((n, m) => n + (typeof m.json === 'string' ? m.json.length : m.json.chars), 0);

/** The body's first remembered id list (README "Worker body encoding"), and the body without it. */
function splicedIdsOf(value: unknown): { key: string; json: IdListJson; rest: Record<string, unknown> } | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const body = value as Record<string, unknown>;
  for (const key of PROMPT_ID_MEMBERS) {
    const json = idListJsonOf(body[key]);
    if (json === undefined) continue;
    const { [key]: _spliced, ...rest } = body;
    return { key, json, rest };
  }
  return undefined;
}

/** The body's text with its remembered id list written as it came (last member), if it has one. */
function withSplicedIds(value: unknown): string | undefined {
  const spliced = splicedIdsOf(value);
  return spliced && withTailText(stringify(spliced.rest), [{ key: spliced.key, json: spliced.json }]);
}

/** `head` (an object's JSON text) with the members put in before its closing brace. */
function withTailText(head: string, tail: readonly TailMember[]): string {
  const open = head.slice(0, -1);
  const keys = tailKeys(open, tail);
  return `${open}${tail.map((m, i) => keys[i] + (typeof m.json === 'string' ? m.json : m.json.text)).join('')}}`;
}

/** withTailText's text as UTF-8 bytes, written without the text. */
function withTailBytes(head: string, tail: readonly TailMember[]): Buffer {
  const open = head.slice(0, -1);
  const keys = tailKeys(open, tail);
  let size = Buffer.byteLength(open, 'utf8') + 1;
  tail.forEach((m, i) => (size += Buffer.byteLength(keys[i], 'utf8') + (typeof m.json === 'string' ? Buffer.byteLength(m.json, 'utf8') : m.json.chars)));
  const out = Buffer.allocUnsafe(size);
  let at = out.write(open, 0, 'utf8');
  tail.forEach((m, i) => {
    at += out.write(keys[i], at, 'utf8');
    at = typeof m.json === 'string' ? at + out.write(m.json, at, 'utf8') : m.json.writeInto(out, at);
  });
  out[at++] = CLOSE_BRACE;
  return at === size ? out : out.subarray(0, at);
}

/** What goes before each tail member's value: a comma unless it is the object's first, and its key. */
const tailKeys = (open: string, tail: readonly TailMember[]): string[] => tail.map((m, i) => `${i > 0 || open.length > 1 ? ',' : ''}${JSON.stringify(m.key)}:`);

/** Object and array members whose JSON text is this long are remembered for the next body that holds them. */
const REMEMBERED_MEMBER_CHARS = 1024;

/**
 * Members' JSON text by the object or array written (README "Worker body encoding"): the
 * context and the generation bodies hold the client's same `messages`, which JSON.stringify
 * wrote twice per request (2.7 ns a character here: 120 µs for a 9k-token chat, the largest
 * part of a chat's CPU in the router). The router never changes a client's members in place.
 * The generation body forgets them (forgetMemberTexts): held for the whole request, the texts
 * outlived the young generation and doubled what an in-flight chat keeps in the old one.
 */
const memberTexts = new ObjectSlot<string>('remembered member JSON');

/** Drops the remembered text of the body's members (a retried generation body writes them again). */
export function forgetMemberTexts(body: Record<string, unknown>): void {
  for (const key of Object.keys(body)) {
    const member = body[key];
    if (typeof member === 'object' && member !== null) memberTexts.clear(member);
  }
}

/**
 * JSON.stringify(value); for a plain object, written member by member with the text of its
 * large object and array members remembered (memberTexts). An object with a toJSON anywhere at
 * its top level is left to JSON.stringify.
 */
function stringify(value: unknown): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || hasToJson(value)) return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  let text = '{';
  for (const key of Object.keys(record)) {
    const member = record[key];
    if (typeof member === 'object' && member !== null && hasToJson(member)) return JSON.stringify(value);
    const json = typeof member === 'object' && member !== null ? memberText(member) : (JSON.stringify(member) as string | undefined);
    // What JSON.stringify leaves out of an object: undefined, functions, symbols.
    if (json === undefined) continue;
    text += `${text.length > 1 ? ',' : ''}${JSON.stringify(key)}:${json}`;
  }
  return `${text}}`;
}

function memberText(member: object): string {
  let json = memberTexts.get(member);
  if (json === undefined) {
    json = JSON.stringify(member);
    if (json.length >= REMEMBERED_MEMBER_CHARS) memberTexts.set(member, json);
  }
  return json;
}

const hasToJson = (value: object): boolean => typeof (value as { toJSON?: unknown }).toJSON === 'function';

/** What JSON would escape in a string: a quote, a backslash, a control character. */
const ESCAPED = /["\\\u0000-\u001f]/;
/** A surrogate without its other half (JSON.stringify writes it as an escape). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether JSON.stringify writes the string as it is, between quotes (about 10 ms for 16 MB of text). */
function writesAsIs(text: string): boolean {
  const wellFormed = (text as { isWellFormed?: () => boolean }).isWellFormed;
  return !ESCAPED.test(text) && (wellFormed ? wellFormed.call(text) : !LONE_SURROGATE.test(text));
}

/** An object's members, or an array's items (holes as undefined, which JSON writes as null), keyed as strings. */
const entriesOf = (value: object, array: boolean): [string, unknown][] =>
  array ? Array.from(value as unknown[], (item, i): [string, unknown] => [String(i), item]) : Object.entries(value);

/** Values looked at for long strings at most: past it, what is left is written by JSON.stringify. */
const MAX_VALUES_LOOKED_AT = 10_000;
/** Nesting looked into for long strings (a chat message's content is at depth 3). */
const MAX_DEPTH = 6;

/** Where a body's long strings are: each object or array holding one (at any depth), with the keys of those it holds itself. */
type LongStrings = Map<object, Set<string>>;

/**
 * The long strings JSON writes as they are, and the objects and arrays on the way to them
 * (bounded: MAX_VALUES_LOOKED_AT, MAX_DEPTH; a long string not found is only written the plain
 * way). Objects with a toJSON are left to JSON.stringify.
 */
function findLongStrings(body: Record<string, unknown>, skip: string | undefined): LongStrings {
  const found: LongStrings = new Map();
  let budget = MAX_VALUES_LOOKED_AT;
  const isLong = (item: unknown, depth: number): boolean =>
    typeof item === 'string' ? item.length >= SLICED_BODY_CHARS && writesAsIs(item) : holds(item, depth + 1);
  // Members read by key or index, not as [key, value] pairs: a body holds lists of thousands of
  // numbers, and a pair per number was a tenth of a long chat's CPU in the router.
  const holds = (value: unknown, depth: number): boolean => {
    if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return false;
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
    // The router's own id lists hold no string; asked without joining their text, which the
    // body may never need as one (it goes out as bytes when long).
    if (idListJsonOf(value) !== undefined) return false;
    let keys: Set<string> | undefined;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        if (--budget < 0) break;
        if (isLong(value[i], depth)) (keys ??= new Set()).add(String(i));
      }
    } else {
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        if (--budget < 0) break;
        if (depth === 0 && key === skip) continue;
        if (isLong(record[key], depth)) (keys ??= new Set()).add(key);
      }
    }
    if (keys) found.set(value, keys);
    return keys !== undefined;
  };
  holds(body, 0);
  return found;
}

/**
 * The body as JSON.stringify writes a plain object, its long strings (findLongStrings) as
 * parts of their own, the objects and arrays around them written member by member;
 * remembered top-level id lists (README "Worker body encoding") written as they came.
 * Undefined when it has no such string.
 */
function withLongStrings(body: Record<string, unknown>, last?: { key: string; text: string }): TextParts | undefined {
  const long = findLongStrings(body, last?.key);
  if (long.size === 0) return undefined;
  const parts: string[] = [];
  let text = '';
  const write = (value: object, top: boolean): void => {
    const array = Array.isArray(value);
    const inside = long.get(value)!;
    text += array ? '[' : '{';
    let first = true;
    const put = (key: string, json: string): void => {
      text += `${first ? '' : ','}${array ? '' : `${JSON.stringify(key)}:`}${json}`;
      first = false;
    };
    for (const [key, item] of entriesOf(value, array)) {
      if (top && key === last?.key) continue;
      if (inside.has(key) && typeof item === 'string') {
        put(key, '"');
        parts.push(text, item);
        text = '"';
      } else if (inside.has(key)) {
        put(key, '');
        write(item as object, false);
      } else {
        const ids = top && PROMPT_ID_MEMBERS.includes(key) ? idListTextOf(item) : undefined;
        // What JSON.stringify does with a value it cannot write: null in an array, left out of an object.
        const json = ids ?? (JSON.stringify(item) as string | undefined) ?? (array ? 'null' : undefined);
        if (json !== undefined) put(key, json);
      }
    }
    if (top && last) put(last.key, last.text);
    text += array ? ']' : '}';
  };
  write(body, true);
  parts.push(text);
  return new TextParts(parts);
}
