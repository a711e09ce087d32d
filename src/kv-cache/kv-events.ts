import { isRecord } from '../common/is-record';

/**
 * KV cache events as workers publish them on `POST /kv_cache_events` (TensorRT-LLM format).
 *
 * v1 block hashes are unsigned 64-bit integers written as bare JSON numbers, so plain
 * JSON.parse/JSON.stringify would lose bits: this module serializes bigints as digits and
 * parses with lossless-json. `v2_sha256` hashes arrive as hex strings and stay strings.
 */
import { isInteger, isSafeNumber, parse as losslessParse } from 'lossless-json';

/** bigint for v1 (64-bit integer) hashes, string for hex (v2_sha256) hashes. */
export type KvBlockHash = bigint | string;

export interface KvUniqueToken {
  type: 'unique_token';
  token_id: number;
  token_extra_id: number;
}

export interface KvStoredBlock {
  type: 'stored_block';
  block_hash: KvBlockHash;
  /** Empty once parsed: the router never reads them (docs/protocol.md, "KV cache events"). */
  tokens: KvUniqueToken[];
  lora_id: number | null;
  cache_level: number;
  priority: number;
  mm_keys?: unknown;
}

export interface KvCreatedData {
  type: 'created';
  /** Absent only in the router's own reset after a lost drain (see KvEventPoller). */
  num_blocks_per_cache_level?: number[];
  hash_algo?: string;
}

export interface KvStoredData {
  type: 'stored';
  parent_hash: KvBlockHash | null;
  blocks: KvStoredBlock[];
  hash_algo?: string;
}

export interface KvRemovedData {
  type: 'removed';
  block_hashes: KvBlockHash[];
  hash_algo?: string;
}

export interface KvUpdatedData {
  type: 'updated';
  block_hash: KvBlockHash;
  cache_level?: { old_value: number; new_value: number } | null;
  priority?: { old_value: number; new_value: number } | null;
  hash_algo?: string;
}

export type KvEventData = KvCreatedData | KvStoredData | KvRemovedData | KvUpdatedData;

export interface KvCacheEvent {
  event_id: number;
  data: KvEventData;
  window_size?: number;
  hash_algo?: string;
  attention_dp_rank?: number;
  /**
   * Set by the router on a part of a cut event but its last (event_id -1): the id of the event
   * it is a part of, so a part of an event already applied (e.g. through a snapshot) is skipped.
   */
  continues?: number;
}

/** Serializes events (or any value) to JSON, writing bigints as bare digits. */
export function serializeKvEvents(value: unknown): string {
  return stringifyWithBigInt(value);
}

const BIG_MARK = '\u0000big:';
const BIG_MARK_RE = /"\\u0000big:(\d+)"/g;

/** JSON.stringify that writes bigint values as JSON numbers without precision loss. */
export function stringifyWithBigInt(value: unknown): string {
  let sawBigInt = false;
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') {
      sawBigInt = true;
      // Negative values cannot be block hashes; write them through as two's complement.
      return BIG_MARK + BigInt.asUintN(64, v).toString();
    }
    return v;
  });
  if (text === undefined) throw new TypeError('value is not serializable to JSON');
  return sawBigInt ? text.replace(BIG_MARK_RE, '$1') : text;
}

/** Parses JSON text, turning integers beyond 2^53 into bigint and keeping other numbers as number. */
export function parseJsonWithBigInt(text: string): unknown {
  return losslessParse(text, null, (digits: string) =>
    isInteger(digits) && !isSafeNumber(digits) ? BigInt(digits) : Number(digits),
  );
}

export class KvEventParseError extends Error {
  override readonly name = 'KvEventParseError';
}

/**
 * Parses the body of `POST /kv_cache_events`. Hash fields become bigint (v1, any size) or stay
 * strings (hex); events given without a `data` wrapper are accepted as their own data, as
 * TensorRT-LLM's router does. Unknown event types are kept as is for the caller to ignore.
 */
export function parseKvEvents(text: string): KvCacheEvent[] {
  let raw: unknown;
  try {
    raw = parseJsonWithBigInt(text);
  } catch (err) {
    throw new KvEventParseError(`kv cache events are not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(raw)) throw new KvEventParseError('kv cache events must be a JSON array');
  return raw.map((item, i) => normalizeEvent(item, i));
}

function normalizeEvent(item: unknown, index: number): KvCacheEvent {
  if (!isRecord(item)) throw new KvEventParseError(`event ${index} is not an object`);
  const data = isRecord(item.data) ? item.data : item;
  if (typeof data.type !== 'string') throw new KvEventParseError(`event ${index} has no type`);
  const out: Record<string, unknown> = { ...data };
  switch (data.type) {
    case 'stored': {
      const blocks = Array.isArray(data.blocks) ? data.blocks : [];
      out.parent_hash = data.parent_hash == null ? null : toBlockHash(data.parent_hash, index);
      out.blocks = blocks.map((b: unknown) => {
        if (!isRecord(b)) throw new KvEventParseError(`event ${index} has a block that is not an object`);
        // The router never reads a block's tokens: dropped, as the fast parser drops them.
        return { ...b, block_hash: toBlockHash(b.block_hash, index), ...(Array.isArray(b.tokens) ? { tokens: [] } : {}) };
      });
      break;
    }
    case 'removed':
      out.block_hashes = (Array.isArray(data.block_hashes) ? data.block_hashes : []).map((h: unknown) =>
        toBlockHash(h, index),
      );
      break;
    case 'updated':
      out.block_hash = toBlockHash(data.block_hash, index);
      break;
    default:
      break;
  }
  const event: KvCacheEvent = {
    event_id: toEventId(item.event_id ?? item.id),
    data: out as unknown as KvEventData,
  };
  if (item.window_size !== undefined) event.window_size = Number(item.window_size);
  if (typeof item.hash_algo === 'string') event.hash_algo = item.hash_algo;
  if (item.attention_dp_rank !== undefined && item.attention_dp_rank !== null) {
    event.attention_dp_rank = Number(item.attention_dp_rank);
  }
  return event;
}

/** Normalizes a hash value from parsed JSON: integers to bigint, strings kept. */
export function toBlockHash(value: unknown, index = 0): KvBlockHash {
  if (typeof value === 'bigint') return BigInt.asUintN(64, value);
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt.asUintN(64, BigInt(value));
  if (typeof value === 'string' && value.length > 0) return value;
  throw new KvEventParseError(`event ${index} has an invalid block hash: ${String(value)}`);
}

function toEventId(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  return -1;
}

/** The algorithm an event was hashed with: event level, then data level, else the default. */
export function eventHashAlgo(event: KvCacheEvent, fallback = 'v1_block_key'): string {
  return event.hash_algo ?? event.data.hash_algo ?? fallback;
}

