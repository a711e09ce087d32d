import { CLOSE_BRACKET as CLOSE, COMMA, isJsonBlank as isBlank, NINE, OPEN_BRACKET as OPEN, ZERO } from './json-chars';

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
 * A non-empty list of JSON integers (no sign, no leading zero, at most 15 digits) at `from`,
 * after JSON blanks; undefined for anything else, which the caller then parses the usual way.
 */
export function scanIdList(bytes: Uint8Array, from: number): ScannedIdList | undefined {
  const n = bytes.length;
  let i = from;
  while (i < n && isBlank(bytes[i])) i++;
  if (bytes[i] !== OPEN) return undefined;
  const start = i++;
  const ids: number[] = [];
  for (;;) {
    while (i < n && isBlank(bytes[i])) i++;
    const first = i;
    let value = 0;
    while (i < n && bytes[i] >= ZERO && bytes[i] <= NINE) value = value * 10 + (bytes[i++] - ZERO);
    const digits = i - first;
    if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && bytes[first] === ZERO)) return undefined;
    ids.push(value);
    while (i < n && isBlank(bytes[i])) i++;
    if (bytes[i] === COMMA) {
      i++;
      continue;
    }
    if (bytes[i] !== CLOSE) return undefined;
    return { ids, start, end: i + 1 };
  }
}
