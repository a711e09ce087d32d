import { randomUUID } from 'node:crypto';
import { isRecord } from '../common/is-record';
import {
  normalizeBlocks,
  normalizeHashes,
  normalizeKvEvent,
  parseKvEventsFast,
  parseQuoted,
  quoteDigits,
  rewriteForParse,
  tryParseKvEventsFast,
} from './fast-kv-events';
import type { KvCacheEvent } from './kv-events';
import { CHAR, nextMember, skipValue, skipWs } from './json-scan';

/** Drains shorter than this parse in one go: the common drain is a few KB after a request. */
export const SLICED_PARSE_FROM_CHARS = 256 * 1024;
/** Text parsed between two turns of the event loop: 2-3 ms of work (test/bench/routing/kv-drain-parse.ts). */
export const PARSE_SLICE_CHARS = 64 * 1024;
/**
 * Text of a drain still arriving held at once beyond what is parsed: an element (an event, or a
 * block of a cut array) longer than this is left to the whole-text parser.
 */
export const MAX_WINDOW_CHARS = 1024 * 1024;

/** Stands in the skeleton of a cut event for the array parsed in runs (random: no input holds it). */
const CUT_MARK = `cut:${randomUUID()}`;
const CUT_KEYS = new Map<string, CutArray['key']>([['"blocks"', 'blocks'], ['"block_hashes"', 'block_hashes']]);
const DIGITS_ONLY = /^[\d\s,]*$/;

/**
 * A drain's text as it arrives, decoded piece by piece: `next` resolves with the next piece
 * (undefined at the end); `whole` with all of it, read to its end (for the whole-text parser).
 */
export interface KvEventsText {
  next(): Promise<string | undefined>;
  whole(): Promise<string>;
}

/**
 * The part of the text the parse still needs: `text` starts at index `base` of the whole.
 * Positions are indexes of the whole text; what lies before `keep` may be dropped.
 */
interface Window {
  text: string;
  base: number;
  keep: number;
  /** No more text will come. */
  ended: boolean;
}

/** What the parse asks of its driver: a turn of the event loop, or more text. */
const TURN = 0;
const MORE = 1;
type Ask = typeof TURN | typeof MORE;

/** The `blocks` (or `block_hashes`) array of an event, parsed in runs while it was scanned. */
interface CutArray {
  key: 'blocks' | 'block_hashes';
  /** The event's text before the array, and the index after the array. */
  head: string;
  close: number;
  values: unknown[];
  /** Runs whose text is only digits, commas and spaces, and the others (see parseRun). */
  digitRuns: number;
  otherRuns: number;
}

interface ElementScan {
  /** Where the event starts. */
  start: number;
  /** Parses the small events before this one: a cut drops the text before it. */
  flush(): boolean;
  cut?: CutArray;
}

/**
 * parseKvEventsFast without stalling the event loop on a large drain (README "KV block
 * tables"): the top-level array is cut into runs of events and a huge `stored`/`removed` event
 * into runs of blocks, each run parsed with the same rewrite, JSON.parse and normalizing, with a
 * turn of the event loop between runs of about PARSE_SLICE_CHARS. Text still arriving is parsed
 * as it comes, never joined whole (joining 63 MB stalls the loop for about 0.2 s). The results
 * are those of parseKvEventsFast on the whole text (a blank text holds no events); anything
 * unexpected is left to it.
 */
export async function parseKvEventsInSlices(source: string | KvEventsText): Promise<KvCacheEvent[]> {
  let first = typeof source === 'string' ? source : '';
  let ended = typeof source === 'string';
  while (!ended && first.length < SLICED_PARSE_FROM_CHARS) {
    const piece = await (source as KvEventsText).next();
    if (piece === undefined) ended = true;
    else first += piece;
  }
  if (ended && first.length < SLICED_PARSE_FROM_CHARS) return first.trim() ? parseKvEventsFast(first) : [];
  const events: KvCacheEvent[] = [];
  const window: Window = { text: first, base: 0, keep: 0, ended };
  const steps = parseSlices(window, events);
  let step = steps.next();
  while (!step.done) {
    if (step.value === TURN) {
      await new Promise((resolve) => setImmediate(resolve));
    } else {
      const piece = await (source as KvEventsText).next();
      if (piece === undefined) window.ended = true;
      else if (window.base + window.text.length - window.keep + piece.length > MAX_WINDOW_CHARS) break;
      else {
        window.text = window.text.slice(window.keep - window.base) + piece;
        window.base = window.keep;
      }
    }
    step = steps.next();
  }
  if (step.done && step.value) return events;
  return parseKvEventsFast(typeof source === 'string' ? source : await source.whole());
}

/** Parses into `out`, asking for turns and text; false where the whole-text parser must decide. */
function* parseSlices(w: Window, out: KvCacheEvent[]): Generator<Ask, boolean> {
  let at = yield* ws(w, 0);
  if (charAt(w, at) !== CHAR.OPEN_BRACKET) return false;
  at = yield* ws(w, at + 1);
  if (charAt(w, at) === CHAR.CLOSE_BRACKET) return yield* onlyWsAfter(w, at + 1);
  /** Small events not parsed yet: the text from batchStart to batchEnd. */
  let batchStart = -1;
  let batchEnd = -1;
  const flush = (): boolean => {
    if (batchStart < 0) return true;
    const events = tryParseKvEventsFast(`[${slice(w, batchStart, batchEnd)}]`);
    batchStart = -1;
    if (!events) return false;
    for (const e of events) out.push(e);
    return true;
  };
  for (;;) {
    w.keep = batchStart >= 0 ? batchStart : at;
    const scan: ElementScan = { start: at, flush };
    const end = yield* scanElement(w, at, scan);
    if (end < 0) return false;
    if (scan.cut) {
      const event = assembleCutEvent(scan.cut.head, slice(w, scan.cut.close, end), scan.cut);
      if (!event) return false;
      out.push(event);
    } else {
      if (batchStart < 0) batchStart = at;
      batchEnd = end;
    }
    const next = yield* member(w, end, CHAR.CLOSE_BRACKET);
    if (!next) return false;
    if (next.closed) return flush() && (yield* onlyWsAfter(w, next.at));
    if (batchStart >= 0 && batchEnd - batchStart >= PARSE_SLICE_CHARS) {
      if (!flush()) return false;
      w.keep = next.at;
      yield TURN;
    }
    at = next.at;
  }
}

/** The index after the event at `at` (-1: cannot go on); a large blocks array is parsed on the way into `scan.cut`. */
function* scanElement(w: Window, at: number, scan: ElementScan): Generator<Ask, number> {
  if (charAt(w, at) !== CHAR.OPEN_BRACE) return yield* valueEnd(w, at);
  return yield* scanObject(w, at, true, scan);
}

/** An event object's members (and, with `outer`, those of its `data` object), cutting a large blocks array. */
function* scanObject(w: Window, open: number, outer: boolean, scan: ElementScan): Generator<Ask, number> {
  let at = yield* ws(w, open + 1);
  if (charAt(w, at) === CHAR.CLOSE_BRACE) return at + 1;
  for (;;) {
    if (charAt(w, at) !== CHAR.QUOTE) return -1;
    const keyEnd = yield* valueEnd(w, at);
    if (keyEnd < 0) return -1;
    const key = slice(w, at, keyEnd);
    let value = yield* ws(w, keyEnd);
    if (charAt(w, value) !== CHAR.COLON) return -1;
    value = yield* ws(w, value + 1);
    const first = charAt(w, value);
    const cutKey = CUT_KEYS.get(key);
    let end: number;
    if (outer && key === '"data"' && first === CHAR.OPEN_BRACE) end = yield* scanObject(w, value, false, scan);
    else if (cutKey && first === CHAR.OPEN_BRACKET) end = yield* scanArray(w, value, cutKey, scan);
    else end = yield* valueEnd(w, value);
    if (end < 0) return -1;
    const next = yield* member(w, end, CHAR.CLOSE_BRACE);
    if (!next) return -1;
    if (next.closed) return next.at;
    at = next.at;
  }
}

/** A blocks array: one longer than a slice is parsed in runs (a turn between them) and becomes the cut. */
function* scanArray(w: Window, open: number, key: CutArray['key'], scan: ElementScan): Generator<Ask, number> {
  let at = yield* ws(w, open + 1);
  if (charAt(w, at) === CHAR.CLOSE_BRACKET) return at + 1;
  let cut: CutArray | undefined;
  let runStart = at;
  for (;;) {
    const end = yield* valueEnd(w, at);
    if (end < 0) return -1;
    const next = yield* member(w, end, CHAR.CLOSE_BRACKET);
    if (!next) return -1;
    if (end - runStart >= PARSE_SLICE_CHARS || (next.closed && cut)) {
      // Two large arrays in one event: left to the whole-text parser.
      if (!cut && scan.cut) return -1;
      if (!cut && !scan.flush()) return -1;
      cut ??= { key, head: slice(w, scan.start, open), close: -1, values: [], digitRuns: 0, otherRuns: 0 };
      if (!parseRun(slice(w, runStart, end), cut)) return -1;
      runStart = next.at;
      // The event's text before the array is in `head`; the runs parsed are done with.
      w.keep = runStart;
      if (!next.closed) yield TURN;
    }
    if (next.closed) {
      if (cut) scan.cut = { ...cut, close: next.at };
      return next.at;
    }
    at = next.at;
  }
}

/*
 * The scanner's steps on a window of text still arriving: where a step reaches the end of the
 * text seen so far (or cannot go on there), it asks for more and runs again, until the text ends.
 */

function charAt(w: Window, pos: number): number {
  return w.text.charCodeAt(pos - w.base);
}

function slice(w: Window, from: number, to: number): string {
  return w.text.slice(from - w.base, to - w.base);
}

/** Past whitespace from `pos`. */
function* ws(w: Window, pos: number): Generator<Ask, number> {
  for (;;) {
    const at = skipWs(w.text, pos - w.base);
    if (at < w.text.length || w.ended) return at + w.base;
    yield MORE;
  }
}

/** The index after the value at `pos`, or -1 (a number at the end of the text seen may go on: more is asked for). */
function* valueEnd(w: Window, pos: number): Generator<Ask, number> {
  for (;;) {
    const end = pos - w.base < w.text.length ? skipValue(w.text, pos - w.base) : -1;
    if ((end >= 0 && end < w.text.length) || w.ended) return end < 0 ? -1 : end + w.base;
    yield MORE;
  }
}

/** nextMember on the window. */
function* member(w: Window, pos: number, close: number): Generator<Ask, { at: number; closed: boolean } | undefined> {
  for (;;) {
    if (skipWs(w.text, pos - w.base) < w.text.length || w.ended) {
      const next = nextMember(w.text, pos - w.base, close);
      if (!next || next.closed || next.at < w.text.length || w.ended) return next && { at: next.at + w.base, closed: next.closed };
    }
    yield MORE;
  }
}

/** Whether only whitespace follows `pos`, to the end of the text. */
function* onlyWsAfter(w: Window, pos: number): Generator<Ask, boolean> {
  w.keep = pos;
  for (;;) {
    const at = skipWs(w.text, pos - w.base);
    if (at < w.text.length) return false;
    if (w.ended) return true;
    // Whitespace seen so far is done with.
    w.keep = pos = at + w.base;
    yield MORE;
  }
}

/**
 * Parses a run of array elements into `cut.values`. The whole-text rewrite quotes a
 * `block_hashes` list's numbers only when the whole list is digits, commas and spaces: a run of
 * such a list is quoted alike, and a list with runs of both kinds is left to the whole-text parser.
 */
function parseRun(run: string, cut: CutArray): boolean {
  const digitsOnly = cut.key === 'block_hashes' && DIGITS_ONLY.test(run);
  if (digitsOnly) cut.digitRuns++;
  else cut.otherRuns++;
  const raw = parseQuoted(`[${digitsOnly ? quoteDigits(run) : rewriteForParse(run)}]`);
  if (!Array.isArray(raw)) return false;
  const values = cut.key === 'blocks' ? normalizeBlocks(raw) : normalizeHashes(raw);
  if (!values) return false;
  for (const v of values) cut.values.push(v);
  return true;
}

/** The event whose text is `head`, the cut array, `tail`; undefined where the whole-text parser must decide. */
function assembleCutEvent(head: string, tail: string, cut: CutArray): KvCacheEvent | undefined {
  if (cut.key === 'block_hashes' && cut.digitRuns > 0 && cut.otherRuns > 0) return undefined;
  const item = parseQuoted(rewriteForParse(`${head}${JSON.stringify(CUT_MARK)}${tail}`));
  if (!isRecord(item)) return undefined;
  const data = isRecord(item.data) ? item.data : item;
  // The cut array must be the one the event's type reads (JSON.parse keeps a repeated key's last value).
  if (data.type !== (cut.key === 'blocks' ? 'stored' : 'removed') || data[cut.key] !== CUT_MARK) return undefined;
  data[cut.key] = [];
  const event = normalizeKvEvent(item);
  if (!event) return undefined;
  (event.data as unknown as Record<string, unknown>)[cut.key] = cut.values;
  return event;
}
