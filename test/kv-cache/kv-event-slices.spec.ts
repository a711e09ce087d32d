import { describe, expect, it } from '@jest/globals';
import { blocksOf, kvEventSlices, serializeKvEvents, type KvCacheEvent } from '../../src/kv-cache';
import { isContinuation } from '../../src/kv-cache/kv-event-slices';

const stored = (id: number, from: number, n: number): KvCacheEvent => ({
  event_id: id,
  data: { type: 'stored', parent_hash: null, blocks: Array.from({ length: n }, (_, i) => ({ type: 'stored_block', block_hash: BigInt(from + i), tokens: [], lora_id: null, cache_level: 0, priority: 35 })) },
});
const removed = (id: number, from: number, n: number): KvCacheEvent => ({ event_id: id, data: { type: 'removed', block_hashes: Array.from({ length: n }, (_, i) => BigInt(from + i)) } });
const hashesOf = (e: KvCacheEvent): unknown[] => (e.data.type === 'stored' ? e.data.blocks.map((b) => b.block_hash) : e.data.type === 'removed' ? e.data.block_hashes : [e.data.type]);

describe('kvEventSlices', () => {
  const drain: KvCacheEvent[] = [
    { event_id: 0, data: { type: 'created', num_blocks_per_cache_level: [1000, 0] } },
    stored(1, 0, 7),
    stored(2, 100, 25),
    removed(3, 0, 3),
    stored(4, 200, 0),
    removed(5, 100, 31),
  ];
  const before = serializeKvEvents(drain);

  it.each([1, 2, 5, 10, 64])('cuts slices of at most %i blocks that keep every block, in order, with each id once', (size) => {
    const slices = [...kvEventSlices(drain, size)];
    for (const slice of slices) expect(slice.reduce((n, e) => n + blocksOf(e), 0)).toBeLessThanOrEqual(size);
    // Every slice but the last is full: an event is cut into the room left.
    for (const slice of slices.slice(0, -1)) expect(slice.reduce((n, e) => n + blocksOf(e), 0)).toBe(size);
    const parts = slices.flat();
    expect(parts.flatMap(hashesOf)).toEqual(drain.flatMap(hashesOf));
    expect(parts.map((e) => e.event_id).filter((id) => id >= 0)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const part of parts) expect(isContinuation(part)).toBe(part.event_id === -1);
    expect(serializeKvEvents(drain)).toBe(before);
  });

  it('leaves a drain that fits as one slice of the same events', () => {
    const slices = [...kvEventSlices(drain, 1000)];
    expect(slices.length).toBe(1);
    expect(slices[0]).toEqual(drain);
  });
});
