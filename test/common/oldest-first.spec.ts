import { describe, expect, it } from '@jest/globals';
import { OldestFirst } from '../../src/common/oldest-first';

describe('OldestFirst', () => {
  it('takes keys oldest first across calls, meeting re-added and new keys at the back', () => {
    const map = new Map<string, number>([['a', 1], ['b', 2], ['c', 3]]);
    const oldest = new OldestFirst(() => map.keys());
    const evict = (): string | undefined => {
      const key = oldest.take();
      if (key !== undefined) map.delete(key);
      return key;
    };
    expect(evict()).toBe('a');
    // b used again: moved to the back.
    map.delete('b');
    map.set('b', 2);
    map.set('d', 4);
    expect([evict(), evict(), evict()]).toEqual(['c', 'b', 'd']);
    expect(evict()).toBeUndefined();
    // Empty, then filled again: a new iteration.
    map.set('e', 5);
    expect(evict()).toBe('e');
  });

  it('starts over after a reset (the collection was cleared)', () => {
    const set = new Set([1, 2, 3]);
    const oldest = new OldestFirst(() => set.values());
    expect(oldest.take()).toBe(1);
    set.clear();
    oldest.reset();
    set.add(9);
    expect(oldest.take()).toBe(9);
  });
});
