import { CLOSE_BRACKET as CLOSE, COMMA, isJsonBlank as isBlank, OPEN_BRACKET as OPEN, ZERO } from './json-chars';

/**
 * A JSON list of token ids read straight from a request's bytes (README "Worker body
 * encoding"): one pass over the digits makes the numbers, where a text look-up and JSON.parse
 * of the list would decode, scan and parse the same bytes three times.
 */

/** More digits than this may not be exact in a double the way JSON.parse rounds it: left to JSON.parse. */
const MAX_DIGITS = 15;

/** The list found at `from` (blanks, then `[`): its ids and its bytes' span, `[` to `]` included. */
export interface ScannedIdList {
  ids: number[];
  start: number;
  end: number;
}

/**
 * The ids as read, before the list's length is known: pushing onto a new array allocated its
 * storage about three times over (each growth copies), a third of a 2k-id request's bytes. A
 * plain array, so that its copy keeps small integers' elements kind (a copy from a typed array
 * holds doubles, slower everywhere the ids are read).
 */
let scratch: number[] = [];
/** The scratch kept between calls holds this many ids at most; a longer list leaves a new one behind. */
const MAX_KEPT_SCRATCH = 65_536;
/** Larger ids turn the scratch's elements into doubles: it is replaced after such a list. */
const MAX_SMALL_ID = 2 ** 30 - 1;

/**
 * A non-empty list of JSON integers (no sign, no leading zero, at most 15 digits) at `from`,
 * after JSON blanks; undefined for anything else, which the caller then parses the usual way.
 */
export function scanIdList(bytes: Uint8Array, from: number): ScannedIdList | undefined {
  const n = bytes.length;
  let i = from;
  while (i < n && isBlank(bytes[i])) i++;
  if (i >= n || bytes[i] !== OPEN) return undefined;
  const start = i++;
  const values = scratch;
  let count = 0;
  let large = false;
  // Each byte read once into `c` (0 past the end, which no test below takes).
  for (;;) {
    let c = i < n ? bytes[i] : 0;
    while (isBlank(c)) c = ++i < n ? bytes[i] : 0;
    const first = i;
    let value = 0;
    let digit = c - ZERO;
    while (digit >= 0 && digit <= 9) {
      value = value * 10 + digit;
      digit = ++i < n ? bytes[i] - ZERO : -1;
    }
    const digits = i - first;
    if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && bytes[first] === ZERO)) return notAList(large);
    if (value > MAX_SMALL_ID) large = true;
    if (count < values.length) values[count] = value;
    else values.push(value);
    count++;
    c = i < n ? bytes[i] : 0;
    while (isBlank(c)) c = ++i < n ? bytes[i] : 0;
    if (c === COMMA) {
      i++;
      continue;
    }
    if (c !== CLOSE) return notAList(large);
    const ids = values.slice(0, count);
    if (large || values.length > MAX_KEPT_SCRATCH) scratch = [];
    return { ids, start, end: i + 1 };
  }
}

function notAList(large: boolean): undefined {
  if (large) scratch = [];
  return undefined;
}
