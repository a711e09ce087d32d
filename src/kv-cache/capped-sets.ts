import { randomInt } from 'node:crypto';

/**
 * Entries per Set at most. V8 grows a Set by doubling its capacity and rehashing all of it in
 * one go (about 12 ms at 2^16 entries, 0.2-0.35 s at 2^20); a split of 2^15 entries costs
 * about 10 ms (test/bench/routing/kv-table-cost.ts).
 */
export const ENTRIES_PER_SET = 2 ** 15;
/** Splits stop here (2^12 Sets): keys a split cannot part (the same hash) then grow one Set, as a plain Set does. */
const MAX_DEPTH = 12;

interface Shape {
  /** How many low bits of the hash the Set's keys share. */
  depth: number;
  /** The size it splits at. */
  splitAt: number;
}

/**
 * A set kept in Sets of at most `cap` entries each, so that no single add rehashes a huge Set
 * (a stall of the event loop that grows with the table: README "KV block tables"). While it
 * fits one Set it is that Set, at that Set's cost. A full Set is split in two by one more bit
 * of the key's hash (extendible hashing: a directory indexed by the hash's low bits), so a
 * lookup still probes one Set. The hash is keyed at random per process, so a worker choosing
 * its block hashes cannot pile them into one Set; each Set splits at a random size between
 * three quarters of the cap and the cap, as evenly filled Sets would otherwise all split
 * within a few adds of each other.
 */
export class CappedSets<T extends bigint | string> {
  /** Slot (the hash's low `depth` bits) -> its Set; a Set of a lower depth fills several slots. */
  private dir: Set<T>[] = [new Set<T>()];
  private depth = 0;
  /** dir[0] while there is one Set. */
  private only: Set<T> | undefined = this.dir[0];
  /** Per Set, once there are several. */
  private readonly shapes = new Map<Set<T>, Shape>();

  constructor(
    private readonly cap = ENTRIES_PER_SET,
    private readonly hashOf: (key: T) => number = keyHash,
  ) {}

  get size(): number {
    if (this.depth === 0) return this.dir[0].size;
    let n = 0;
    for (const s of this.shapes.keys()) n += s.size;
    return n;
  }

  /** How many Sets hold the entries (tests). */
  get setCount(): number {
    return this.depth === 0 ? 1 : this.shapes.size;
  }

  has(value: T): boolean {
    // The one-Set case on its own, small enough to inline: the KV-aware path calls has() per block (hex keys).
    const only = this.only;
    return only !== undefined ? only.has(value) : this.setOf(value).has(value);
  }

  add(value: T): void {
    let set = this.setOf(value);
    // The size test first: a Set under three quarters of the cap never splits (see splitSize).
    if (set.size >= this.cap * 0.75 && set.size >= (this.shapes.get(set)?.splitAt ?? this.cap) && !set.has(value) && this.split(set)) set = this.setOf(value);
    set.add(value);
  }

  delete(value: T): boolean {
    return this.setOf(value).delete(value);
  }

  clear(): void {
    this.dir = [new Set<T>()];
    this.depth = 0;
    this.only = this.dir[0];
    this.shapes.clear();
  }

  keys(): IterableIterator<T> {
    return this.depth === 0 ? this.dir[0].keys() : this.allKeys();
  }

  private *allKeys(): IterableIterator<T> {
    for (const s of this.shapes.keys()) yield* s.keys();
  }

  private setOf(value: T): Set<T> {
    return this.depth === 0 ? this.dir[0] : this.dir[this.hashOf(value) & ((1 << this.depth) - 1)];
  }

  /** Moves the keys of a full Set whose next hash bit is set to a new Set (doubling the directory if needed); false at MAX_DEPTH. */
  private split(full: Set<T>): boolean {
    const depth = this.shapes.get(full)?.depth ?? 0;
    if (depth >= MAX_DEPTH) return false;
    if (depth === this.depth) {
      this.dir = this.dir.concat(this.dir);
      this.depth++;
      this.only = undefined;
    }
    const bit = 1 << depth;
    const high = new Set<T>();
    for (const v of full) {
      if (this.hashOf(v) & bit) {
        high.add(v);
        full.delete(v);
      }
    }
    this.shapes.set(full, { depth: depth + 1, splitAt: this.splitSize() });
    this.shapes.set(high, { depth: depth + 1, splitAt: this.splitSize() });
    for (let slot = 0; slot < this.dir.length; slot++) if (this.dir[slot] === full && slot & bit) this.dir[slot] = high;
    return true;
  }

  private splitSize(): number {
    return Math.ceil(this.cap * (0.75 + Math.random() / 4));
  }
}

/** Random odd multipliers: the key hash differs per process. */
const MUL_A = (randomInt(2 ** 31) * 2 + 1) | 0;
const MUL_B = (randomInt(2 ** 31) * 2 + 1) | 0;
const STRING_HASH_CHARS = 64;

/**
 * A 32-bit hash of a block key, keyed by MUL_A/MUL_B: a bigint's value as a double (BigInt
 * arithmetic would allocate; keys that differ only below its 53 bits of precision, at most
 * 2^11 of them, share a hash), a string's first 64 characters.
 */
export function keyHash(key: bigint | string): number {
  let h: number;
  if (typeof key === 'bigint') {
    const d = Number(key);
    h = Math.imul(d >>> 0, MUL_A) ^ Math.imul((d / 4294967296) >>> 0, MUL_B);
  } else {
    h = key.length;
    const n = Math.min(key.length, STRING_HASH_CHARS);
    for (let i = 0; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), MUL_A);
  }
  // So that every output bit depends on every input bit.
  h ^= h >>> 16;
  h = Math.imul(h, MUL_B);
  h ^= h >>> 13;
  return h;
}
