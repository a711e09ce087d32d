import { randomUUID } from 'node:crypto';
import {
  isRecord,
  normalizeBlocks,
  normalizeHashes,
  normalizeKvEvent,
  parseKvEventsFast,
  parseQuoted,
  quoteDigits,
  quoteHashes,
  tryParseKvEventsFast,
} from './fast-kv-events';
import type { KvCacheEvent } from './kv-events';
import { CHAR, nextMember, skipString, skipValue, skipWs } from './json-scan';

/** Drains shorter than this parse in one go: the common drain is a few KB after a request. */
export const SLICED_PARSE_FROM_CHARS = 256 * 1024;
/** Text parsed between two turns of the event loop: 2-3 ms of work (test/bench/routing/kv-drain-parse.ts). */
export const PARSE_SLICE_CHARS = 64 * 1024;

/** Stands in the skeleton of a cut event for the array parsed in runs (random: no input holds it). */
const CUT_MARK = `cut:${randomUUID()}`;
const CUT_KEYS = new Map<string, CutArray['key']>([['"blocks"', 'blocks'], ['"block_hashes"', 'block_hashes']]);
const DIGITS_ONLY = /^[\d\s,]*$/;

/** The `blocks` (or `block_hashes`) array of an event, parsed in runs while it was scanned. */
interface CutArray {
  key: 'blocks' | 'block_hashes';
  /** Where the array starts in the text and the index after it. */
  open: number;
  close: number;
  values: unknown[];
  /** Runs whose text is only digits, commas and spaces, and the others (see parseRun). */
  digitRuns: number;
  otherRuns: number;
}

interface ElementScan {
  cut?: CutArray;
}

/**
 * parseKvEventsFast without stalling the event loop on a large drain (README "KV block
 * tables"): the top-level array is cut into runs of events and a huge `stored`/`removed` event
 * into runs of blocks, each run parsed with the same rewrite, JSON.parse and normalizing, with a
 * turn of the event loop between runs of about PARSE_SLICE_CHARS. The results are those of
 * parseKvEventsFast; anything unexpected is left to it, on the whole text.
 */
export async function parseKvEventsInSlices(text: string): Promise<KvCacheEvent[]> {
  if (text.length < SLICED_PARSE_FROM_CHARS) return parseKvEventsFast(text);
  const events: KvCacheEvent[] = [];
  const steps = parseSlices(text, events);
  let step = steps.next();
  while (!step.done) {
    await new Promise((resolve) => setImmediate(resolve));
    step = steps.next();
  }
  return step.value ? events : parseKvEventsFast(text);
}

/** Parses into `out`, yielding between slices; false where the whole-text parser must decide. */
function* parseSlices(text: string, out: KvCacheEvent[]): Generator<void, boolean> {
  let at = skipWs(text, 0);
  if (text.charCodeAt(at) !== CHAR.OPEN_BRACKET) return false;
  at = skipWs(text, at + 1);
  if (text.charCodeAt(at) === CHAR.CLOSE_BRACKET) return skipWs(text, at + 1) === text.length;
  /** Small events not parsed yet: the text from batchStart to batchEnd. */
  let batchStart = -1;
  let batchEnd = -1;
  const flush = (): boolean => {
    if (batchStart < 0) return true;
    const events = tryParseKvEventsFast(`[${text.slice(batchStart, batchEnd)}]`);
    batchStart = -1;
    if (!events) return false;
    for (const e of events) out.push(e);
    return true;
  };
  for (;;) {
    const scan: ElementScan = {};
    const end = yield* scanElement(text, at, scan);
    if (end < 0) return false;
    if (scan.cut) {
      if (!flush()) return false;
      const event = assembleCutEvent(text.slice(at, scan.cut.open), text.slice(scan.cut.close, end), scan.cut);
      if (!event) return false;
      out.push(event);
    } else {
      if (batchStart < 0) batchStart = at;
      batchEnd = end;
    }
    const next = nextMember(text, end, CHAR.CLOSE_BRACKET);
    if (!next) return false;
    if (next.closed) return flush() && skipWs(text, next.at) === text.length;
    if (batchStart >= 0 && batchEnd - batchStart >= PARSE_SLICE_CHARS) {
      if (!flush()) return false;
      yield;
    }
    at = next.at;
  }
}

/** The index after the event at `at` (-1: cannot go on); a large blocks array is parsed on the way into `scan.cut`. */
function* scanElement(text: string, at: number, scan: ElementScan): Generator<void, number> {
  if (text.charCodeAt(at) !== CHAR.OPEN_BRACE) return skipValue(text, at);
  return yield* scanObject(text, at, true, scan);
}

/** An event object's members (and, with `outer`, those of its `data` object), cutting a large blocks array. */
function* scanObject(text: string, open: number, outer: boolean, scan: ElementScan): Generator<void, number> {
  let at = skipWs(text, open + 1);
  if (text.charCodeAt(at) === CHAR.CLOSE_BRACE) return at + 1;
  for (;;) {
    if (text.charCodeAt(at) !== CHAR.QUOTE) return -1;
    const keyEnd = skipString(text, at);
    if (keyEnd < 0) return -1;
    const key = text.slice(at, keyEnd);
    let value = skipWs(text, keyEnd);
    if (text.charCodeAt(value) !== CHAR.COLON) return -1;
    value = skipWs(text, value + 1);
    const first = text.charCodeAt(value);
    const cutKey = CUT_KEYS.get(key);
    let end: number;
    if (outer && key === '"data"' && first === CHAR.OPEN_BRACE) end = yield* scanObject(text, value, false, scan);
    else if (cutKey && first === CHAR.OPEN_BRACKET) end = yield* scanArray(text, value, cutKey, scan);
    else end = skipValue(text, value);
    if (end < 0) return -1;
    const next = nextMember(text, end, CHAR.CLOSE_BRACE);
    if (!next) return -1;
    if (next.closed) return next.at;
    at = next.at;
  }
}

/** A blocks array: one longer than a slice is parsed in runs (a turn between them) and becomes the cut. */
function* scanArray(text: string, open: number, key: CutArray['key'], scan: ElementScan): Generator<void, number> {
  let at = skipWs(text, open + 1);
  if (text.charCodeAt(at) === CHAR.CLOSE_BRACKET) return at + 1;
  let cut: CutArray | undefined;
  let runStart = at;
  for (;;) {
    const end = skipValue(text, at);
    if (end < 0) return -1;
    const next = nextMember(text, end, CHAR.CLOSE_BRACKET);
    if (!next) return -1;
    if (end - runStart >= PARSE_SLICE_CHARS || (next.closed && cut)) {
      // Two large arrays in one event: left to the whole-text parser.
      if (!cut && scan.cut) return -1;
      cut ??= { key, open, close: -1, values: [], digitRuns: 0, otherRuns: 0 };
      if (!parseRun(text.slice(runStart, end), cut)) return -1;
      runStart = next.at;
      if (!next.closed) yield;
    }
    if (next.closed) {
      if (cut) scan.cut = { ...cut, close: next.at };
      return next.at;
    }
    at = next.at;
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
  const raw = parseQuoted(`[${digitsOnly ? quoteDigits(run) : quoteHashes(run)}]`);
  if (!Array.isArray(raw)) return false;
  const values = cut.key === 'blocks' ? normalizeBlocks(raw) : normalizeHashes(raw);
  if (!values) return false;
  for (const v of values) cut.values.push(v);
  return true;
}

/** The event whose text is `head`, the cut array, `tail`; undefined where the whole-text parser must decide. */
function assembleCutEvent(head: string, tail: string, cut: CutArray): KvCacheEvent | undefined {
  if (cut.key === 'block_hashes' && cut.digitRuns > 0 && cut.otherRuns > 0) return undefined;
  const item = parseQuoted(quoteHashes(`${head}${JSON.stringify(CUT_MARK)}${tail}`));
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
