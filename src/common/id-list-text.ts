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
export const ID_CUT_MARK = '"\\u0000ids"';
/** What ID_CUT_MARK parses to. */
export const ID_CUT_VALUE = '\u0000ids';

/**
 * The first `"<member>":[ids]` of a JSON text cut out, ID_CUT_MARK in its place: the rest parses
 * without the bulk of the numbers, and the caller checks that the mark came back as the
 * top-level member (else the cut was inside a string or a nested object, and it parses the
 * text whole).
 */
export function cutIdList(text: string, member: string): { rest: string; ids: string } | undefined {
  const key = `"${member}":`;
  const at = text.indexOf(key);
  if (at < 0) return undefined;
  const from = at + key.length;
  ID_LIST.lastIndex = from;
  const m = ID_LIST.exec(text);
  if (!m) return undefined;
  return { rest: text.slice(0, from) + ID_CUT_MARK + text.slice(from + m[0].length), ids: m[1] };
}
