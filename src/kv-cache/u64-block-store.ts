import { randomInt } from 'node:crypto';
import { u64Halves as halves, u64Scratch as scratch, U64_HIGH as HIGH, U64_LOW as LOW } from './u64-halves';

/** Slots per shard at most; a full-size shard splits (or, at MAX_DEPTH, grows) at about half full. */
export const SHARD_SLOTS = 2 ** 16;
/** Slots of a new table (4 KiB): a router has a table per worker and hash algorithm, most of them small. */
const FIRST_SLOTS = 256;
/** Splits stop here (2^12 shards); a shard at that depth grows instead, as a plain table would. */
const MAX_DEPTH = 12;
/** The expiry of a confirmed block: never. */
const CONFIRMED = Infinity;

/** Random odd multipliers: where a key lands differs per process (see README "KV block tables"). */
const MUL_A = (randomInt(2 ** 31) * 2 + 1) | 0;
const MUL_B = (randomInt(2 ** 31) * 2 + 1) | 0;
const MUL_C = (randomInt(2 ** 31) * 2 + 1) | 0;

/** A 32-bit hash of a 64-bit key given as its high and low halves, every output bit on every input bit. */
function hashOf(hi: number, lo: number): number {
  let h = Math.imul(lo, MUL_A);
  h ^= Math.imul(hi ^ (h >>> 15), MUL_B);
  h ^= h >>> 16;
  h = Math.imul(h, MUL_C);
  return h ^ (h >>> 13);
}

/** The key splitKey was given last: its halves and hash (module state, so a look-up allocates nothing). */
let keyHi = 0;
let keyLo = 0;
let keyHash = 0;

function splitKey(key: bigint): void {
  scratch[0] = key;
  keyHi = halves[HIGH];
  keyLo = halves[LOW];
  keyHash = hashOf(keyHi, keyLo);
}

/** Slot words: the key's halves, then the expiry's float64 (words 2-3, which also say whether the slot is empty or deleted). */
const WORDS = 4;
/** The high word of a deleted slot's expiry: a NaN V8 never writes (its NaN is 0x7ff8...). */
const DELETED_HIGH = 0xffffffff;
const EXPIRY_HIGH = 2 + HIGH;
const EXPIRY_LOW = 2 + LOW;

/**
 * One open-addressing table (linear probing). A slot is 16 bytes, key and expiry side by side,
 * so a probe reads one cache line: with the three or four arrays of a slot's fields apart, each
 * look-up of a prompt's few hundred blocks in a table of a million cost that many misses. An
 * empty slot's expiry is all zero bits (+0), which no live slot holds: an expiry of 0 is kept
 * as -0, equal to it in every comparison.
 */
class Shard {
  readonly words: Uint32Array;
  /** The same bytes: slot i's expiry is at 2i + 1. */
  readonly expiries: Float64Array;
  /** Live keys, and slots taken by a key or a deleted one (probes stop only at an empty slot). */
  live = 0;
  used = 0;
  /** Replaced by a rebuilt or split shard: its keys live on there. */
  retired = false;
  readonly slots: number;
  private shift: number;

  constructor(
    slots: number,
    /** How many low bits of the hash its keys share (the directory's index). */
    public depth: number,
    /** The live count it splits at: a random point, so evenly filled shards do not all split at once. */
    public splitAt: number,
  ) {
    this.words = new Uint32Array(slots * WORDS);
    this.expiries = new Float64Array(this.words.buffer);
    this.slots = slots;
    this.shift = 32 - Math.log2(slots);
  }

  isLive(slot: number): boolean {
    const w = slot * WORDS;
    const high = this.words[w + EXPIRY_HIGH];
    return high !== DELETED_HIGH && (high !== 0 || this.words[w + EXPIRY_LOW] !== 0);
  }

  hiAt(slot: number): number {
    return this.words[slot * WORDS];
  }

  loAt(slot: number): number {
    return this.words[slot * WORDS + 1];
  }

  expiryAt(slot: number): number {
    return this.expiries[slot * 2 + 1];
  }

  /** 0 kept as -0 (all zero bits would read as empty); a NaN as V8's own (any other could read as deleted). */
  setExpiry(slot: number, expiry: number): void {
    this.expiries[slot * 2 + 1] = expiry === 0 ? -0 : expiry === expiry ? expiry : NaN;
  }

  /** The key's slot, or -1. Slots are picked by the hash's high bits; the directory used its low ones. */
  find(hi: number, lo: number, h: number): number {
    const mask = this.slots - 1;
    const words = this.words;
    for (let i = h >>> this.shift; ; i = (i + 1) & mask) {
      const w = i * WORDS;
      const high = words[w + EXPIRY_HIGH];
      if (high === 0 && words[w + EXPIRY_LOW] === 0) return -1;
      if (words[w] === hi && words[w + 1] === lo && high !== DELETED_HIGH) return i;
    }
  }

  /** Puts a key known to be absent; returns its slot. */
  insert(hi: number, lo: number, h: number, expiry: number): number {
    const mask = this.slots - 1;
    let i = h >>> this.shift;
    while (this.isLive(i)) i = (i + 1) & mask;
    const w = i * WORDS;
    if (this.words[w + EXPIRY_HIGH] !== DELETED_HIGH) this.used++;
    this.words[w] = hi;
    this.words[w + 1] = lo;
    this.setExpiry(i, expiry);
    this.live++;
    return i;
  }

  remove(slot: number): void {
    const w = slot * WORDS;
    this.words[w + EXPIRY_HIGH] = DELETED_HIGH;
    this.words[w + EXPIRY_LOW] = 0;
    this.live--;
  }
}

/**
 * The blocks of one worker whose keys are 64-bit (v1_block_key, v2_sha256_64), each confirmed
 * (by the worker's events) or recorded with an expiry, in typed arrays: a Map or Set keyed by
 * bigint costs a value comparison and hash per probe, and its entries are objects the GC
 * walks. Kept in shards of 2^16 slots at most, split by the hash's low bits as the table grows
 * (extendible hashing, as CappedSets), so no insert rehashes the whole table at once; deleted
 * keys leave markers that a shard's rebuild clears. Keys are bigints from 0 to 2^64 - 1 (the
 * caller checks: a BigUint64Array would wrap any other).
 */
export class U64BlockStore {
  private dir: Shard[];
  private depth = 0;
  /** The dropExpired pass under way. */
  private pass: { shards: Shard[]; shard: number; slot: number; earliest: number; moved: boolean } | undefined;
  confirmed = 0;
  tracked = 0;

  constructor(
    private readonly shardSlots = SHARD_SLOTS,
    private readonly maxDepth = MAX_DEPTH,
  ) {
    this.dir = [this.newShard(Math.min(FIRST_SLOTS, shardSlots), 0)];
  }

  get shardCount(): number {
    return new Set(this.dir).size;
  }

  /** Whether the key is confirmed, or recorded with an expiry after `now`. */
  has(key: bigint, now: number): boolean {
    splitKey(key);
    const shard = this.shardOf(keyHash);
    const slot = shard.find(keyHi, keyLo, keyHash);
    return slot >= 0 && shard.expiryAt(slot) > now;
  }

  /** Confirms the key (recorded or not before). */
  confirm(key: bigint): void {
    this.put(key, CONFIRMED, true);
  }

  /** Records the key until `expiry`, unless it is confirmed. */
  track(key: bigint, expiry: number): void {
    this.put(key, expiry, false);
  }

  delete(key: bigint): boolean {
    splitKey(key);
    const shard = this.shardOf(keyHash);
    const slot = shard.find(keyHi, keyLo, keyHash);
    if (slot < 0) return false;
    this.count(shard.expiryAt(slot), -1);
    shard.remove(slot);
    return true;
  }

  /**
   * Drops recorded keys whose expiry is at or before `now`, scanning at most `budget` slots
   * from where the previous call stopped, so that a table of a million confirmed blocks is
   * swept over many calls rather than in one stall. Returns the earliest expiry left once a
   * pass over every shard is done (Infinity: none), undefined while one is under way. A pass
   * that saw shards rebuilt under it returns `now`: the keys they moved were not all seen.
   */
  dropExpired(now: number, budget = Infinity): number | undefined {
    const pass = (this.pass ??= { shards: [...new Set(this.dir)], shard: 0, slot: 0, earliest: Infinity, moved: false });
    while (pass.shard < pass.shards.length) {
      const shard = pass.shards[pass.shard];
      if (shard.retired) {
        pass.moved = true;
        pass.shard++;
        pass.slot = 0;
        continue;
      }
      const end = Math.min(shard.slots, pass.slot + budget);
      budget -= end - pass.slot;
      for (let i = pass.slot; i < end; i++) {
        if (!shard.isLive(i)) continue;
        const expiry = shard.expiryAt(i);
        if (expiry === CONFIRMED) continue;
        if (expiry <= now) {
          shard.remove(i);
          this.tracked--;
        } else if (expiry < pass.earliest) pass.earliest = expiry;
      }
      pass.slot = end;
      if (end < shard.slots) return undefined;
      pass.shard++;
      pass.slot = 0;
    }
    this.pass = undefined;
    return pass.moved ? now : pass.earliest;
  }

  /** The confirmed keys (`true`) or the recorded ones (`false`), as bigints, in no particular order. */
  *keys(confirmed: boolean): IterableIterator<bigint> {
    for (const shard of new Set(this.dir)) {
      for (let i = 0; i < shard.slots; i++) {
        if (shard.isLive(i) && (shard.expiryAt(i) === CONFIRMED) === confirmed) yield (BigInt(shard.hiAt(i)) << 32n) | BigInt(shard.loAt(i));
      }
    }
  }

  clear(): void {
    this.pass = undefined;
    this.dir = [this.newShard(Math.min(FIRST_SLOTS, this.shardSlots), 0)];
    this.depth = 0;
    this.confirmed = 0;
    this.tracked = 0;
  }

  private put(key: bigint, expiry: number, confirm: boolean): void {
    splitKey(key);
    const hi = keyHi;
    const lo = keyLo;
    const h = keyHash;
    let shard = this.shardOf(h);
    const slot = shard.find(hi, lo, h);
    if (slot >= 0) {
      const was = shard.expiryAt(slot);
      if (was === CONFIRMED) return;
      if (confirm) {
        this.tracked--;
        this.confirmed++;
      }
      shard.setExpiry(slot, expiry);
      return;
    }
    while (shard.used + 1 > shard.slots / 2) shard = this.makeRoom(shard, h);
    shard.insert(hi, lo, h, expiry);
    this.count(expiry, 1);
  }

  private shardOf(h: number): Shard {
    return this.dir[h & ((1 << this.depth) - 1)];
  }

  private count(expiry: number, by: number): void {
    if (expiry === CONFIRMED) this.confirmed += by;
    else this.tracked += by;
  }

  /**
   * A shard at half its slots: rebuilt when deleted markers fill it, else grown while under
   * SHARD_SLOTS, else split in two (grown at MAX_DEPTH); the shard for hash `h` after.
   */
  private makeRoom(full: Shard, h: number): Shard {
    if (full.live < full.splitAt) {
      this.replace(full, this.rebuilt(full, full.slots, full.depth));
    } else if (full.slots < this.shardSlots) {
      this.replace(full, this.rebuilt(full, full.slots * 2, full.depth));
    } else if (full.depth < this.maxDepth) {
      if (full.depth === this.depth) {
        this.dir = this.dir.concat(this.dir);
        this.depth++;
      }
      const bit = 1 << full.depth;
      const low = this.newShard(this.shardSlots, full.depth + 1);
      const high = this.newShard(this.shardSlots, full.depth + 1);
      this.moveKeys(full, low, high, bit);
      for (let i = 0; i < this.dir.length; i++) if (this.dir[i] === full) this.dir[i] = i & bit ? high : low;
      full.retired = true;
    } else {
      this.replace(full, this.rebuilt(full, full.slots * 2, full.depth));
    }
    return this.shardOf(h);
  }

  private replace(old: Shard, next: Shard): void {
    for (let i = 0; i < this.dir.length; i++) if (this.dir[i] === old) this.dir[i] = next;
    old.retired = true;
  }

  /** A new shard of `slots` holding the live keys of `from`. */
  private rebuilt(from: Shard, slots: number, depth: number): Shard {
    const out = this.newShard(slots, depth);
    this.moveKeys(from, out, out, 0);
    return out;
  }

  /** Puts each live key of `from` into `low`, or into `high` when its hash has `bit` (one pass, even for a split). */
  private moveKeys(from: Shard, low: Shard, high: Shard, bit: number): void {
    for (let i = 0; i < from.slots; i++) {
      if (!from.isLive(i)) continue;
      const hi = from.hiAt(i);
      const lo = from.loAt(i);
      const h = hashOf(hi, lo);
      (h & bit ? high : low).insert(hi, lo, h, from.expiryAt(i));
    }
  }

  private newShard(slots: number, depth: number): Shard {
    // Between three eighths and half of the slots, at random (see Shard.splitAt).
    return new Shard(slots, depth, Math.floor((slots / 2) * (0.75 + Math.random() / 4)));
  }
}

const MAX_U64 = (1n << 64n) - 1n;

/** A key U64BlockStore holds: a bigint from 0 to 2^64 - 1. */
export const isU64 = (key: bigint | string): key is bigint => typeof key === 'bigint' && key >= 0n && key <= MAX_U64;
