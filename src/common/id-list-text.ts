import { CLOSE_BRACKET, COMMA, OPEN_BRACKET, ZERO } from './json-chars';
import { ObjectSlot } from './object-slot';
import { TokenIdArray, type TokenIds } from './token-id-array';

/**
 * Token-id lists kept as the text they arrived as, so a body that passes them on is written by
 * splicing that text in rather than by serialising thousands of numbers again (README
 * "Worker body encoding"). The text is tied to
 * the parsed array itself (a WeakMap: copies of the body that share the array share it, and
 * it goes with the array), with the array's length and end values as a guard against an edit.
 * The tokenizer's lists come as the members of their pieces ("1,2,3"), joined only when a
 * string is asked for: a worker body writes them into its bytes one by one.
 */
export class IdListJson {
  private joined: string | undefined;
  /** Characters of the JSON text, all ASCII (digits, commas, brackets, whitespace). */
  readonly chars: number;

  private constructor(
    text: string | undefined,
    private readonly members: readonly string[] | undefined,
  ) {
    this.joined = text;
    let chars = text?.length ?? 2 + Math.max(0, (members?.length ?? 0) - 1);
    if (members) for (const m of members) chars += m.length;
    this.chars = chars;
  }

  static ofText(text: string): IdListJson {
    return new IdListJson(text, undefined);
  }

  /** The list `[m1,m2,...]`, each member a non-empty run of comma-separated integers. */
  static ofMembers(members: readonly string[]): IdListJson {
    return new IdListJson(undefined, members);
  }

  get text(): string {
    return (this.joined ??= `[${this.members!.join(',')}]`);
  }

  /** Writes the text into `out` at `at` (room for `chars` bytes); returns where it ends. */
  writeInto(out: Buffer, at: number): number {
    if (this.joined !== undefined) return at + out.write(this.joined, at, 'latin1');
    out[at++] = OPEN_BRACKET;
    this.members!.forEach((member, i) => {
      if (i > 0) out[at++] = COMMA;
      at += out.write(member, at, 'latin1');
    });
    out[at++] = CLOSE_BRACKET;
    return at;
  }
}

const MINUS = 0x2d;

interface RememberedIds {
  json: IdListJson;
  length: number;
  first: number;
  last: number;
}

/** On the list itself, not in a WeakMap: see ObjectSlot. */
const texts = new ObjectSlot<RememberedIds>('remembered id-list JSON');

/**
 * A non-empty JSON list of non-negative integers, nothing else. Its compact run (`1,2,3`, as
 * TensorRT-LLM's JSON encoders write lists) has a loop of its own, without the blanks' tries:
 * 0.65x the time of one loop for both layouts on a 9k-id answer; a spaced list costs the same
 * (README "Worker body encoding").
 */
const ID_LIST = /\s*(\[\s*\d+(?:,\d+)*(?:\s*,\s*\d+)*\s*\])/y;

/** The members a prompt's token ids come in (completions, chat): parsed keeping their text, spliced back. */
export const PROMPT_ID_MEMBERS: readonly string[] = ['prompt', 'prompt_token_ids'];

/** Lists shorter than this cost less to write again than to look for. */
export const MIN_SPLICED_IDS = 64;

/** Remembers that `ids` is written as `text` (a JSON list of those very integers). */
export function rememberIdListText(ids: TokenIds, text: string): void {
  rememberIdListJson(ids, IdListJson.ofText(text));
}

/** Remembers that `ids` is written as `json` (a JSON list of those very integers). */
export function rememberIdListJson(ids: TokenIds, json: IdListJson): void {
  if (ids.length >= MIN_SPLICED_IDS) texts.set(ids, { json, length: ids.length, first: ids[0], last: ids[ids.length - 1] });
}

/** The JSON of `value` when it is a list remembered by rememberIdListJson and unchanged since. */
export function idListJsonOf(value: unknown): IdListJson | undefined {
  if (!Array.isArray(value) && !(value instanceof TokenIdArray)) return undefined;
  const known = texts.get(value);
  if (!known || value.length !== known.length || value[0] !== known.first || value[value.length - 1] !== known.last) return undefined;
  return known.json;
}

/**
 * Whether `value` is a list remembered by rememberIdListJson (read as digits by the body parser,
 * or written by the tokenizer), so non-negative integers without a look at each of its ids.
 */
export function isRememberedIdList(value: unknown): boolean {
  return idListJsonOf(value) !== undefined;
}

/** Whether every item is a non-negative integer (a token id); a remembered list is known to be. */
export function allTokenIds(items: readonly unknown[]): boolean {
  if (isRememberedIdList(items)) return true;
  for (const x of items) if (!Number.isInteger(x) || (x as number) < 0) return false;
  return true;
}

/** The JSON text of `value` when it is a list remembered by rememberIdListJson and unchanged since. */
export function idListTextOf(value: unknown): string | undefined {
  return idListJsonOf(value)?.text;
}

let digitScratch = Buffer.allocUnsafe(0);

/**
 * `ids.join(',')`, written digit by digit: four times faster than the typed array's join on
 * the few thousand ids of a chat turn's new pieces (README "Worker body encoding").
 */
export function idListMembers(ids: Int32Array): string {
  const room = ids.length * 12;
  if (digitScratch.length < room) digitScratch = Buffer.allocUnsafe(Math.max(room, 64 * 1024));
  const out = digitScratch;
  let at = 0;
  for (let i = 0; i < ids.length; i++) {
    if (i > 0) out[at++] = COMMA;
    let v = ids[i];
    if (v < 0) {
      out[at++] = MINUS;
      v = -v;
    }
    const digits = v < 10 ? 1 : v < 100 ? 2 : v < 1e3 ? 3 : v < 1e4 ? 4 : v < 1e5 ? 5 : v < 1e6 ? 6 : v < 1e7 ? 7 : v < 1e8 ? 8 : v < 1e9 ? 9 : 10;
    at += digits;
    for (let end = at; end > at - digits; ) {
      const rest = Math.floor(v / 10);
      out[--end] = ZERO + v - rest * 10;
      v = rest;
    }
  }
  return out.toString('latin1', 0, at);
}

/** Stands in for a cut-out list while the rest is parsed; found at the top level, the cut was right. */
const ID_CUT_MARK = '"\\u0000ids"';
/** What ID_CUT_MARK parses to. */
const ID_CUT_VALUE = '\u0000ids';

/**
 * The first `"<member>":[ids]` of a JSON text found, the text around the list and the list's
 * own text: parseAroundCut then parses the rest without the bulk of the numbers.
 */
export function cutIdList(text: string, member: string): { before: string; after: string; ids: string } | undefined {
  const key = `"${member}":`;
  const at = text.indexOf(key);
  if (at < 0) return undefined;
  const from = at + key.length;
  ID_LIST.lastIndex = from;
  const m = ID_LIST.exec(text);
  if (!m) return undefined;
  return { before: text.slice(0, from), after: text.slice(from + m[0].length), ids: m[1] };
}

/**
 * The JSON object `before` ID_CUT_MARK `after` spells, when the mark came back as its
 * top-level `member` (so the list cut out was that member's value; the caller puts the list
 * in the mark's place or deletes it). Undefined when it does not parse (the mark broke a
 * string) or the mark is anywhere else: the caller then parses the whole text.
 */
export function parseAroundCut(before: string, after: string, member: string): Record<string, unknown> | undefined {
  let rest: unknown;
  try {
    rest = JSON.parse(before + ID_CUT_MARK + after);
  } catch {
    return undefined;
  }
  if (typeof rest !== 'object' || rest === null || Array.isArray(rest)) return undefined;
  return (rest as Record<string, unknown>)[member] === ID_CUT_VALUE ? (rest as Record<string, unknown>) : undefined;
}
