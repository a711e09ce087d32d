import { describe, expect, it } from '@jest/globals';
import { KvBlockTable } from '../../src/kv-cache';
import { U64BlockStore } from '../../src/kv-cache/u64-block-store';
import { mulberry32 as rng } from '../../src/simulator/seeded-random';

/** Keys crowding the edges: zero halves, all-ones halves, and the same low or high half. */
function keyPool(random: () => number, n: number): bigint[] {
  const edges = [0n, 1n, 0xffffffffn, 1n << 32n, (1n << 64n) - 1n, 0xffffffff00000000n];
  const out = [...edges];
  while (out.length < n) {
    const hi = BigInt(Math.floor(random() * 2 ** 32));
    const lo = BigInt(random() < 0.2 ? 7 : Math.floor(random() * 2 ** 32));
    out.push((hi << 32n) | lo);
  }
  return out;
}

/** The model of a store: key -> expiry, Infinity for a confirmed key. */
type Model = Map<bigint, number>;

/** Confirms (op below 0.3) or records (below 0.6) the key in both; false for any other op, left to the caller. */
function putBoth(store: U64BlockStore, model: Model, key: bigint, op: number, expiry: number): boolean {
  if (op < 0.3) {
    store.confirm(key);
    model.set(key, Infinity);
  } else if (op < 0.6) {
    store.track(key, expiry);
    if (model.get(key) !== Infinity) model.set(key, expiry);
  }
  return op < 0.6;
}

describe('U64BlockStore', () => {
  it.each([
    { what: 'one shard', slots: 1 << 16, maxDepth: 12, keys: 3000 },
    { what: 'shards split from 16 slots', slots: 16, maxDepth: 12, keys: 3000 },
    { what: 'shards that grow once splits stop', slots: 16, maxDepth: 2, keys: 3000 },
  ])('answers as a Map of key -> expiry over random confirms, records, deletes and sweeps ($what)', ({ slots, maxDepth, keys }) => {
    const random = rng(slots * 31 + maxDepth);
    const pool = keyPool(random, keys);
    const store = new U64BlockStore(slots, maxDepth);
    const model: Model = new Map();
    let now = 0;
    for (let step = 0; step < 40_000; step++) {
      const key = pool[Math.floor(random() * pool.length)];
      const op = random();
      if (putBoth(store, model, key, op, now + 1 + Math.floor(random() * 50))) continue;
      if (op < 0.75) {
        expect(store.delete(key)).toBe(model.delete(key));
      } else if (op < 0.76) {
        now += 10;
        let earliest = Infinity;
        for (const [k, expiry] of model) {
          if (expiry === Infinity) continue;
          if (expiry <= now) model.delete(k);
          else earliest = Math.min(earliest, expiry);
        }
        expect(store.dropExpired(now)).toBe(earliest);
      } else {
        expect(store.has(key, now)).toBe((model.get(key) ?? -Infinity) > now);
      }
    }
    const confirmed = [...model].filter(([, e]) => e === Infinity).map(([k]) => k);
    const tracked = [...model].filter(([, e]) => e !== Infinity).map(([k]) => k);
    expect(store.confirmed).toBe(confirmed.length);
    expect(store.tracked).toBe(tracked.length);
    const sorted = (keys: Iterable<bigint>): bigint[] => [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(sorted(store.keys(true))).toEqual(sorted(confirmed));
    expect(sorted(store.keys(false))).toEqual(sorted(tracked));
    if (slots === 16) expect(store.shardCount).toBeGreaterThan(1);
  });

  it('sweeps in bounded steps: nothing reported until a pass is done, then what one full sweep reports', () => {
    const stepped = new U64BlockStore(64);
    const whole = new U64BlockStore(64);
    for (let i = 0n; i < 3000n; i++) {
      const key = i * 0x9e3779b97f4a7c15n & ((1n << 64n) - 1n);
      for (const store of [stepped, whole]) {
        if (i % 3n === 0n) store.confirm(key);
        else store.track(key, Number(i % 100n));
      }
    }
    const expected = whole.dropExpired(50);
    let calls = 0;
    let got: number | undefined;
    while ((got = stepped.dropExpired(50, 40)) === undefined) calls++;
    expect(calls).toBeGreaterThan(10);
    expect(got).toBe(expected);
    expect(stepped.tracked).toBe(whole.tracked);
    expect(stepped.confirmed).toBe(1000);
  });

  it('finishes a pass that shards were rebuilt under, keys intact, asking for another at once', () => {
    const store = new U64BlockStore(16);
    for (let i = 1n; i <= 40n; i++) store.track(i << 33n, 10);
    expect(store.dropExpired(0, 8)).toBeUndefined();
    // Splits and rebuilds while the pass is under way.
    for (let i = 41n; i <= 400n; i++) store.track(i << 33n, 10);
    let got: number | undefined;
    while ((got = store.dropExpired(0, 8)) === undefined);
    expect(got).toBe(0);
    expect(store.tracked).toBe(400);
    for (let i = 1n; i <= 400n; i++) expect(store.has(i << 33n, 5)).toBe(true);
    expect(store.dropExpired(20)).toBe(Infinity);
    expect(store.tracked).toBe(0);
  });

  it('stays a Map of key -> expiry with stepped sweeps interleaved with every other operation', () => {
    const random = rng(97);
    const pool = keyPool(random, 2000);
    const store = new U64BlockStore(16);
    const model: Model = new Map();
    let now = 0;
    for (let step = 0; step < 30_000; step++) {
      const key = pool[Math.floor(random() * pool.length)];
      const op = random();
      if (putBoth(store, model, key, op, now + 1 + Math.floor(random() * 50))) continue;
      if (op < 0.7) {
        // An expired record may be gone already (swept) or not yet: only a live one's answer is fixed.
        const live = (model.get(key) ?? -Infinity) > now;
        const had = model.delete(key);
        const got = store.delete(key);
        if (live || !had) expect(got).toBe(had);
      } else if (op < 0.75) {
        now += 1;
        // A few slots at a time: passes span inserts, deletes, splits and rebuilds.
        store.dropExpired(now, 5);
      } else {
        expect(store.has(key, now)).toBe((model.get(key) ?? -Infinity) > now);
      }
    }
    // Whatever pass is under way ends; a whole one then leaves exactly the model's live keys.
    while (store.dropExpired(now, 1000) === undefined);
    store.dropExpired(now);
    for (const [k, expiry] of model) if (expiry <= now) model.delete(k);
    expect(store.tracked).toBe([...model.values()].filter((e) => e !== Infinity).length);
    expect(store.confirmed).toBe([...model.values()].filter((e) => e === Infinity).length);
    for (const key of pool) expect(store.has(key, now)).toBe(model.has(key));
  });

  it('keeps any expiry, zero and below included, apart from an empty or deleted slot, the all-zero key too', () => {
    const store = new U64BlockStore(16);
    const keys = [0n, 1n << 32n, 1n, (1n << 64n) - 1n];
    keys.forEach((key, i) => store.track(key, [0, -0, -5, 3][i]));
    expect(store.tracked).toBe(4);
    expect(keys.map((key) => store.has(key, -1))).toEqual([true, true, false, true]);
    expect(store.has(0n, 0)).toBe(false);
    expect([...store.keys(false)].sort()).toEqual([...keys].sort());
    expect(store.delete(0n)).toBe(true);
    expect(store.has(0n, -1)).toBe(false);
    expect(store.delete(0n)).toBe(false);
    // A deleted slot is found again by neither key nor probe: the key comes back as new.
    store.confirm(0n);
    expect(store.has(0n, 1e12)).toBe(true);
    expect(store.confirmed).toBe(1);
    expect(store.dropExpired(0)).toBe(3);
    expect([...store.keys(false)].sort()).toEqual([(1n << 64n) - 1n]);
    // A NaN of any bits is a record that never matches, as in a Map, not a deleted slot.
    const oddNaN = new Float64Array(new Uint32Array([0xffffffff, 0xffffffff]).buffer)[0];
    store.track(7n, oddNaN);
    expect(store.tracked).toBe(2);
    expect(store.has(7n, -Infinity)).toBe(false);
    expect(store.delete(7n)).toBe(true);
  });

  it('clears to an empty table that fills again', () => {
    const store = new U64BlockStore(16);
    for (let i = 0n; i < 100n; i++) store.confirm(i * 0x100000003n);
    store.clear();
    expect(store.confirmed + store.tracked).toBe(0);
    expect(store.has(5n * 0x100000003n, 0)).toBe(false);
    store.track(5n * 0x100000003n, 10);
    expect(store.has(5n * 0x100000003n, 0)).toBe(true);
    expect(store.shardCount).toBe(1);
  });
});

describe('KvBlockTable with 64-bit keys', () => {
  it('records a chain and finds its keys as they were given', () => {
    const chain = Array.from({ length: 300 }, (_, i) => (BigInt(i) << 40n) | 0xfedcba98n);
    const table = new KvBlockTable();
    table.track(chain.slice(0, 200), 1000, 0);
    table.add(chain[200]);
    expect(table.matchPrefix(chain, 1)).toBe(201);
    // Recorded blocks expire, the confirmed one stays; the prefix then stops at the first block.
    expect(table.matchPrefix(chain, 1000)).toBe(0);
    expect(table.has(chain[200], 1000)).toBe(true);
    expect(table.trackedSize).toBe(200);
    expect(new Set(table.trackedKeys())).toEqual(new Set(chain.slice(0, 200)));
    expect([...table.keys()]).toEqual([chain[200]]);
  });

  it('sweeps expired records of a large table over later records, a shard per call', () => {
    const table = new KvBlockTable();
    const old = Array.from({ length: 200_000 }, (_, i) => BigInt(i) * 0x100000001n + 7n);
    table.track(old, 1000, 0);
    expect(table.trackedSize).toBe(200_000);
    // Due after the ttl: each record then scans at most one shard's slots.
    let calls = 0;
    while (table.trackedSize > calls && calls < 1000) table.track([BigInt(++calls) << 40n], 1000, 2000);
    expect(calls).toBeGreaterThan(1);
    expect(table.trackedSize).toBe(calls);
    expect(table.matchPrefix(old, 2000)).toBe(0);
  });

  it('keeps keys outside 64 bits and hex keys apart from the 64-bit ones', () => {
    const table = new KvBlockTable();
    const max = (1n << 64n) - 1n;
    table.add(max);
    table.add(-1n);
    table.add(1n << 64n);
    table.add('ff');
    expect(table.size).toBe(4);
    expect(table.has(0n, 0)).toBe(false);
    expect(table.has(255n, 0)).toBe(false);
    table.delete(-1n);
    expect(table.has(max, 0)).toBe(true);
    expect(table.has(-1n, 0)).toBe(false);
    expect(new Set(table.keys())).toEqual(new Set([max, 1n << 64n, 'ff']));
  });
});
