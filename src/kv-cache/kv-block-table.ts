/**
 * The block hashes the router believes a worker holds. Keys are bigint for 64-bit hashes
 * (v1_block_key, v2_sha256_64), kept in typed arrays, and string for hex (v2_sha256) hashes.
 *
 * Two kinds of entries: blocks the worker's KV cache events confirmed (the truth, kept until a
 * `removed` or `created` event), and blocks the router recorded itself when it routed a prompt
 * there (read-your-writes: the next request for that prompt must not wait for the events).
 * A recorded block is confirmed by a `stored` event, dropped by a `removed` one, and expires
 * if the worker never confirms it.
 */
import { CappedSets } from './capped-sets';
import { isU64, U64BlockStore } from './u64-block-store';

export type BlockKey = bigint | string;

/** Slots of the 64-bit store a sweep scans per call (a shard of 2^16 slots: well under a millisecond). */
const SWEEP_SLOTS_PER_CALL = 2 ** 16;

export class KvBlockTable {
  /** 64-bit keys, confirmed and recorded alike, in typed arrays (U64BlockStore). */
  private readonly wide = new U64BlockStore();
  /** Other keys (hex): confirmed blocks in Sets of bounded size, so a table of a million blocks grows without a long rehash. */
  private readonly blocks = new CappedSets<BlockKey>();
  /** Other keys recorded, not yet confirmed: hash -> expiry (performance.now() ms). */
  private readonly tracked = new Map<BlockKey, number>();
  /** The earliest expiry among the recorded blocks (Infinity: none), when the last scan was, and how often one may run. */
  private earliestExpiry = Infinity;
  private lastSweep = -Infinity;
  private sweepGapMs = 0;
  /** While the 64-bit store's sweep is under way: the earliest expiry of the other keys, and of records made since it began. */
  private sweeping: { others: number; since: number } | undefined;
  /** Total blocks the worker reported at `created`, when known. */
  capacity?: number;
  eventsApplied = 0;
  lastEventId?: number;

  /** Blocks confirmed by events. */
  get size(): number {
    return this.wide.confirmed + this.blocks.size;
  }

  /** Blocks recorded on routing and not confirmed yet (expired ones may linger until a sweep). */
  get trackedSize(): number {
    return this.wide.tracked + this.tracked.size;
  }

  has(hash: BlockKey, now = performance.now()): boolean {
    if (isU64(hash)) return this.wide.has(hash, now);
    if (this.blocks.has(hash)) return true;
    const expiry = this.tracked.get(hash);
    return expiry !== undefined && expiry > now;
  }

  /** A block the worker's events say it stores. */
  add(hash: BlockKey): void {
    if (isU64(hash)) return this.wide.confirm(hash);
    this.blocks.add(hash);
    this.tracked.delete(hash);
  }

  /** A block the worker's events say it dropped (confirmed or only recorded). */
  delete(hash: BlockKey): void {
    if (isU64(hash)) return void this.wide.delete(hash);
    this.blocks.delete(hash);
    this.tracked.delete(hash);
  }

  clear(): void {
    this.wide.clear();
    this.blocks.clear();
    this.tracked.clear();
    this.earliestExpiry = Infinity;
    this.sweeping = undefined;
  }

  /** Records blocks of a prompt just served by the worker, valid for `ttlMs` unless confirmed. */
  track(hashes: Iterable<BlockKey>, ttlMs: number, now = performance.now()): void {
    this.sweep(now);
    const expiry = now + ttlMs;
    // Updated in place: the same prompt routed again costs no delete and re-insert per block.
    for (const h of hashes) {
      if (isU64(h)) this.wide.track(h, expiry);
      else if (!this.blocks.has(h)) this.tracked.set(h, expiry);
    }
    if (expiry < this.earliestExpiry) this.earliestExpiry = expiry;
    if (this.sweeping && expiry < this.sweeping.since) this.sweeping.since = expiry;
    this.sweepGapMs = ttlMs / 4;
  }

  /**
   * Drops recorded blocks whose time is up (has() already ignores them): a sweep starts once the
   * earliest is due, at most every quarter of the ttl; the 64-bit store is scanned
   * SWEEP_SLOTS_PER_CALL slots per call (one per record), so its cost stays a few steps per
   * block and never one stall over a table of a million blocks.
   */
  sweep(now = performance.now()): void {
    if (!this.sweeping) {
      if (now < this.earliestExpiry || now < this.lastSweep + this.sweepGapMs) return;
      this.lastSweep = now;
      let others = Infinity;
      for (const [h, expiry] of this.tracked) {
        if (expiry <= now) this.tracked.delete(h);
        else if (expiry < others) others = expiry;
      }
      this.sweeping = { others, since: Infinity };
    }
    const wide = this.wide.dropExpired(now, SWEEP_SLOTS_PER_CALL);
    if (wide === undefined) return;
    this.earliestExpiry = Math.min(wide, this.sweeping.others, this.sweeping.since);
    this.sweeping = undefined;
  }

  /** The confirmed hashes, in no particular order (admin state, tests). */
  *keys(): IterableIterator<BlockKey> {
    yield* this.wide.keys(true);
    yield* this.blocks.keys();
  }

  /** The recorded, unconfirmed hashes (tests). */
  *trackedKeys(): IterableIterator<BlockKey> {
    yield* this.wide.keys(false);
    yield* this.tracked.keys();
  }

  /** Number of leading hashes of the chain present in the table (a prefix match). */
  matchPrefix(chain: readonly BlockKey[], now = performance.now()): number {
    let n = 0;
    while (n < chain.length && this.has(chain[n], now)) n++;
    return n;
  }
}
