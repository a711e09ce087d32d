import { isRecord } from '../common/is-record';
import { parseKvEvents, type KvCacheEvent, type KvStoredBlock } from './kv-events';

/** A digit string the rewrite below turned into a JSON string, so it keeps all 64 bits. */
const MARK = '#';
const HASH_FIELD = /("(?:block_hash|parent_hash)"\s*:\s*)(\d+)/g;
const HASH_LIST = /("block_hashes"\s*:\s*\[)([\d\s,]*)\]/g;
const DIGITS = /\d+/g;
/**
 * A stored block's `tokens` list (per-token objects, about 60 bytes a token: most of a drain),
 * matched only when it holds no bracket, so it never ends early; one that does is parsed as is.
 */
const TOKEN_LIST = /("tokens"\s*:\s*)\[[^[\]]*\]/g;

/**
 * Parses `/kv_cache_events` many times faster than a lossless JSON parser (a worker's answer
 * for a 9k-token prompt is ~570 KB, almost all of it per-token objects the router never reads):
 * the blocks' token lists are emptied and the hash fields' digits quoted in the text first, then
 * the native parser runs. Anything unexpected falls back to the lossless parser, so results are
 * always the same (both give every block an empty `tokens`; docs/protocol.md, "KV cache events").
 */
export function parseKvEventsFast(text: string): KvCacheEvent[] {
  return tryParseKvEventsFast(text) ?? parseKvEvents(text);
}

/** The fast parse, or undefined where the lossless parser must decide. */
export function tryParseKvEventsFast(text: string): KvCacheEvent[] | undefined {
  const raw = parseQuoted(rewriteForParse(text));
  if (!Array.isArray(raw)) return undefined;
  const out: KvCacheEvent[] = [];
  for (const item of raw) {
    const event = normalizeKvEvent(item);
    if (!event) return undefined;
    out.push(event);
  }
  return out;
}

/** Empties the blocks' token lists and quotes the digits of hash fields and `block_hashes` lists (see parseKvEventsFast). */
export function rewriteForParse(text: string): string {
  return text
    .replace(TOKEN_LIST, '$1[]')
    .replace(HASH_FIELD, (_m, key: string, digits: string) => `${key}"${MARK}${digits}"`)
    .replace(HASH_LIST, (_m, open: string, list: string) => `${open}${quoteDigits(list)}]`);
}

/** Every run of digits in `text` quoted as a marked hash. */
export function quoteDigits(text: string): string {
  return text.replace(DIGITS, (d) => `"${MARK}${d}"`);
}

/** JSON.parse of rewritten text; undefined for invalid JSON. */
export function parseQuoted(quoted: string): unknown {
  try {
    return JSON.parse(quoted) as unknown;
  } catch {
    return undefined;
  }
}

/** One parsed event as the applier and publisher read it; undefined for anything unexpected. */
export function normalizeKvEvent(item: unknown): KvCacheEvent | undefined {
  if (!isRecord(item)) return undefined;
  const data = isRecord(item.data) ? item.data : item;
  if (typeof data.type !== 'string') return undefined;
  const out: Record<string, unknown> = { ...data };
  switch (data.type) {
    case 'stored': {
      if (!Array.isArray(data.blocks)) return undefined;
      out.parent_hash = data.parent_hash == null ? null : blockHash(data.parent_hash);
      const blocks = normalizeBlocks(data.blocks);
      if (!blocks) return undefined;
      out.blocks = blocks;
      break;
    }
    case 'removed': {
      if (!Array.isArray(data.block_hashes)) return undefined;
      const hashes = normalizeHashes(data.block_hashes);
      if (!hashes) return undefined;
      out.block_hashes = hashes;
      break;
    }
    case 'updated':
      out.block_hash = blockHash(data.block_hash);
      break;
    default:
      break;
  }
  const id = item.event_id ?? item.id;
  const event: KvCacheEvent = { event_id: typeof id === 'number' ? id : -1, data: out as unknown as KvCacheEvent['data'] };
  if (item.window_size !== undefined) event.window_size = Number(item.window_size);
  if (typeof item.hash_algo === 'string') event.hash_algo = item.hash_algo;
  if (typeof item.continues === 'number' && event.event_id < 0) event.continues = item.continues;
  return event;
}

/** A stored event's parsed blocks with their hashes normalized; undefined if one is unexpected. */
export function normalizeBlocks(blocks: readonly unknown[]): KvStoredBlock[] | undefined {
  const out: KvStoredBlock[] = [];
  for (const b of blocks) {
    if (!isRecord(b)) return undefined;
    const h = blockHash(b.block_hash);
    if (h === undefined) return undefined;
    const block: Record<string, unknown> = { ...b, block_hash: h };
    // A list the text rewrite left (it held a bracket) is emptied here, as the lossless parser does.
    if (Array.isArray(b.tokens) && b.tokens.length) block.tokens = [];
    out.push(block as unknown as KvStoredBlock);
  }
  return out;
}

/** A removed event's parsed hashes normalized; undefined if one is unexpected. */
export function normalizeHashes(hashes: readonly unknown[]): Array<bigint | string> | undefined {
  const out: Array<bigint | string> = [];
  for (const v of hashes) {
    const h = blockHash(v);
    if (h === undefined) return undefined;
    out.push(h);
  }
  return out;
}

function blockHash(v: unknown): bigint | string | undefined {
  if (typeof v === 'string') return v.startsWith(MARK) ? BigInt.asUintN(64, BigInt(v.slice(1))) : v.length ? v : undefined;
  // Small hashes the rewrite did not see (e.g. in an unexpected layout) are exact as numbers.
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  return undefined;
}

