import type { FastifyBodyParser, FastifyInstance } from 'fastify';
import { scanIdList } from './id-list-bytes';
import { MIN_SPLICED_IDS, parseAroundCut, PROMPT_ID_MEMBERS, rememberIdListText } from './id-list-text';

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
    // The three keys are ASCII: looked for in the bytes as in the text.
    if (body.indexOf('\\u') < 0 && body.indexOf('__proto__') < 0 && body.indexOf('constructor') < 0) {
      let parsed: unknown;
      try {
        parsed = parseKeepingIdText(body);
      } catch {
        return checked(req, body.toString(), done);
      }
      return done(null, parsed);
    }
    checked(req, body.toString(), done);
  };
}

/**
 * JSON.parse, with the top-level prompt id list read from the bytes and remembered as its
 * text: the rest of the body, the list cut out and a mark in its place, is all JSON.parse sees.
 */
function parseKeepingIdText(body: Buffer): unknown {
  if (body.length < MIN_ID_BODY_CHARS) return JSON.parse(body.toString());
  for (const member of PROMPT_ID_MEMBERS) {
    const key = `"${member}":`;
    const at = body.indexOf(key);
    if (at < 0) continue;
    const list = scanIdList(body, at + key.length);
    if (!list) continue;
    const rest = parseAroundCut(body.toString('utf8', 0, list.start), body.toString('utf8', list.end), member);
    if (!rest) break;
    rest[member] = list.ids;
    // Digits, commas, blanks and brackets: latin1 reads them as UTF-8 would, without decoding.
    rememberIdListText(list.ids, body.toString('latin1', list.start, list.end));
    return rest;
  }
  return JSON.parse(body.toString());
}
