import type { FastifyBodyParser, FastifyInstance } from 'fastify';
import { cutIdList, ID_CUT_VALUE, MIN_SPLICED_IDS, PROMPT_ID_MEMBERS, rememberIdListText } from './id-list-text';

/** A body shorter than this cannot hold an id list worth keeping as text. */
const MIN_ID_BODY_CHARS = MIN_SPLICED_IDS * 2;

/**
 * The JSON body parser of the app: Fastify's own (secure-json-parse, prototype-poisoning
 * checks as configured) for every body that could carry a forbidden key, plain JSON.parse for
 * the others. A body without `__proto__`, `constructor` or a `\u` escape cannot spell either
 * key, so secure-json-parse would return JSON.parse's result as it is; its two scans of the
 * text are what this saves (a large share of a 2k-token-id body's parse). A body JSON.parse
 * refuses (empty, a byte-order mark, malformed) goes to Fastify's parser, whose answer it keeps.
 * A prompt's token-id list is kept as the text it came as (see id-list-text.ts), so the
 * worker bodies splice it in instead of writing the numbers again.
 */
export function jsonBodyParser(fastify: FastifyInstance): FastifyBodyParser<Buffer> {
  const { onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig;
  const checked = fastify.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  return (req, body, done) => {
    const text = body.toString();
    if (text.indexOf('\\u') < 0 && text.indexOf('__proto__') < 0 && text.indexOf('constructor') < 0) {
      let parsed: unknown;
      try {
        parsed = parseKeepingIdText(text);
      } catch {
        return checked(req, text, done);
      }
      return done(null, parsed);
    }
    checked(req, text, done);
  };
}

/** JSON.parse, with the top-level prompt id list remembered as its text. */
function parseKeepingIdText(text: string): unknown {
  if (text.length < MIN_ID_BODY_CHARS) return JSON.parse(text);
  for (const member of PROMPT_ID_MEMBERS) {
    const cut = cutIdList(text, member);
    if (!cut) continue;
    let rest: unknown;
    try {
      rest = JSON.parse(cut.rest);
    } catch {
      break; // the list was inside a string: the mark broke it
    }
    // The mark back at the top level: the cut list was the member's value.
    if (typeof rest !== 'object' || rest === null || Array.isArray(rest) || (rest as Record<string, unknown>)[member] !== ID_CUT_VALUE) break;
    const ids = JSON.parse(cut.ids) as number[];
    (rest as Record<string, unknown>)[member] = ids;
    rememberIdListText(ids, cut.ids);
    return rest;
  }
  return JSON.parse(text);
}
