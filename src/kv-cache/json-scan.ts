import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, isJsonBlank as isWs, OPEN_BRACE, OPEN_BRACKET, QUOTE } from '../common/json-chars';

/**
 * A non-validating scanner that finds where JSON values end, so a large text can be cut into
 * pieces at its structure (never inside a string) and each piece parsed on its own. Every piece
 * still goes through JSON.parse, which validates it; the scanner only has to be right for valid
 * JSON, and answers -1 where it cannot go on.
 */

export function skipWs(text: string, pos: number): number {
  while (pos < text.length && isWs(text.charCodeAt(pos))) pos++;
  return pos;
}

/** The index after the string starting at `pos` (a quote), or -1 if it never ends. */
export function skipString(text: string, pos: number): number {
  let from = pos + 1;
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** The index after the value starting at `pos`, or -1. */
export function skipValue(text: string, pos: number): number {
  const first = text.charCodeAt(pos);
  if (first === QUOTE) return skipString(text, pos);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (let i = pos; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        const end = skipString(text, i);
        if (end < 0) return -1;
        i = end - 1;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        depth++;
      } else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) {
        return i + 1;
      }
    }
    return -1;
  }
  // A number or a literal: up to the next delimiter.
  let i = pos;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c === COLON || c === QUOTE || isWs(c)) break;
  }
  return i > pos ? i : -1;
}

/** After a member: past a `,` and whitespace (`closed` false) or past the `close` bracket (`closed` true); undefined for anything else. */
export function nextMember(text: string, pos: number, close: number): { at: number; closed: boolean } | undefined {
  const p = skipWs(text, pos);
  const c = text.charCodeAt(p);
  if (c === COMMA) return { at: skipWs(text, p + 1), closed: false };
  if (c === close) return { at: p + 1, closed: true };
  return undefined;
}

export const CHAR = { QUOTE, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, COLON } as const;
