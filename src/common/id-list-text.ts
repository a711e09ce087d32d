/**
 * Token-id lists kept as the text they arrived as, so a body that passes them on is written by
 * splicing that text in rather than by serialising thousands of numbers again (README
 * "Worker body encoding"). The text is tied to
 * the parsed array itself (a WeakMap: copies of the body that share the array share it, and
 * it goes with the array), with the array's length and end values as a guard against an edit.
 */
interface IdListText {
  text: string;
  length: number;
  first: number;
  last: number;
}

const texts = new WeakMap<readonly number[], IdListText>();

/** A non-empty JSON list of non-negative integers, nothing else. */
const ID_LIST = /\s*(\[\s*(?:\d+\s*,\s*)*\d+\s*\])/y;

/** The members a prompt's token ids come in (completions, chat): parsed keeping their text, spliced back. */
export const PROMPT_ID_MEMBERS: readonly string[] = ['prompt', 'prompt_token_ids'];

/** Lists shorter than this cost less to write again than to look for. */
export const MIN_SPLICED_IDS = 64;

/** Remembers that `ids` is written as `text` (a JSON list of those very integers). */
export function rememberIdListText(ids: readonly number[], text: string): void {
  if (ids.length >= MIN_SPLICED_IDS) texts.set(ids, { text, length: ids.length, first: ids[0], last: ids[ids.length - 1] });
}

/** The JSON text of `value` when it is a list remembered by rememberIdListText and unchanged since. */
export function idListTextOf(value: unknown): string | undefined {
  if (!Array.isArray(value)) return undefined;
  const known = texts.get(value as number[]);
  if (!known || value.length !== known.length || value[0] !== known.first || value[value.length - 1] !== known.last) return undefined;
  return known.text;
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
