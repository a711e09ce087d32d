import { describe, expect, it } from '@jest/globals';
import { CappedSets, ENTRIES_PER_SET, keyHash } from '../../src/kv-cache/capped-sets';
import { KvBlockTable } from '../../src/kv-cache/kv-block-table';

/** The most entries any Set held when `add` was called on it while `run` ran. */
function largestSetDuring(run: () => void): number {
  const add = Set.prototype.add; // eslint-disable-line @typescript-eslint/unbound-method
  let largest = 0;
  Set.prototype.add = function <T>(this: Set<T>, value: T): Set<T> {
    const out = add.call(this, value) as Set<T>;
    if (this.size > largest) largest = this.size;
    return out;
  };
  try {
    run();
  } finally {
    Set.prototype.add = add;
  }
  return largest;
}

/** A hash that is the key itself: which Set a key lands in is plain to see. */
const identity = (key: bigint): number => Number(key);

describe('CappedSets', () => {
  it('splits a full Set in two by the next bit of the key hash, and answers as one set', () => {
    const set = new CappedSets<bigint>(8, identity);
    for (let i = 0n; i < 9n; i++) set.add(i);
    // 0..7 filled the one Set; the 9th key split it into even and odd keys.
    expect(set.setCount).toBe(2);
    for (let i = 9n; i < 16n; i++) set.add(i);
    expect(set.size).toBe(16);
    for (let i = 0n; i < 16n; i++) expect(set.has(i)).toBe(true);
    expect(set.has(16n)).toBe(false);
    expect([...set.keys()].sort((a, b) => Number(a - b))).toEqual(Array.from({ length: 16 }, (_, i) => BigInt(i)));
    expect(set.delete(3n)).toBe(true);
    expect(set.has(3n)).toBe(false);
    expect(set.delete(3n)).toBe(false);
    expect(set.size).toBe(15);
  });

  it('never holds a value twice and never passes the cap while keys can be parted', () => {
    const set = new CappedSets<bigint>(8, identity);
    const largest = largestSetDuring(() => {
      for (let round = 0; round < 2; round++) for (let i = 0n; i < 100n; i++) set.add(i);
    });
    expect(largest).toBeLessThanOrEqual(8);
    expect(set.size).toBe(100);
    expect(new Set(set.keys()).size).toBe(100);
    for (let i = 0n; i < 100n; i += 2n) set.delete(i);
    expect(set.size).toBe(50);
    for (let i = 0n; i < 100n; i++) expect(set.has(i)).toBe(i % 2n === 1n);
  });

  it('keys a split cannot part (the same hash) end in one Set that grows past the cap, as a plain Set', () => {
    const set = new CappedSets<bigint>(8, () => 0);
    for (let i = 0n; i < 40n; i++) set.add(i);
    expect(set.size).toBe(40);
    for (let i = 0n; i < 40n; i++) expect(set.has(i)).toBe(true);
    set.delete(5n);
    expect(set.has(5n)).toBe(false);
    expect(set.size).toBe(39);
  });

  it('clear empties every Set', () => {
    const set = new CappedSets<bigint>(8, identity);
    for (let i = 0n; i < 20n; i++) set.add(i);
    set.clear();
    expect(set.size).toBe(0);
    expect(set.setCount).toBe(1);
    expect(set.has(1n)).toBe(false);
  });

  it('spreads block keys evenly, bigint and hex alike, whatever bits they share', () => {
    const keys = [(i: number): bigint | string => BigInt(i) << 40n, (i: number): bigint | string => BigInt(i) * 1024n, (i: number): bigint | string => i.toString(16).padStart(64, '0')];
    for (const key of keys) {
      const counts = [0, 0, 0, 0];
      for (let i = 0; i < 4000; i++) counts[keyHash(key(i)) & 3]++;
      for (const c of counts) expect(c).toBeGreaterThan(800);
    }
  });
});

describe('KvBlockTable growth', () => {
  it('keeps a table of more than ENTRIES_PER_SET blocks in Sets of at most ENTRIES_PER_SET (no rehash of the whole table)', () => {
    const table = new KvBlockTable();
    const blocks = 2 * ENTRIES_PER_SET + 5;
    const largest = largestSetDuring(() => {
      for (let i = 1; i <= blocks; i++) table.add(BigInt(i));
    });
    expect(largest).toBeLessThanOrEqual(ENTRIES_PER_SET);
    expect(table.size).toBe(blocks);
    expect(table.has(1n) && table.has(BigInt(blocks)) && !table.has(BigInt(blocks + 1))).toBe(true);
    table.delete(1n);
    expect(table.size).toBe(blocks - 1);
    expect(new Set(table.keys()).size).toBe(blocks - 1);
  });
});
