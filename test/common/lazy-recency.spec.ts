import { describe, expect, it } from '@jest/globals';
import { LazyRecency } from '../../src/common/lazy-recency';

describe('LazyRecency', () => {
  it('moves a used entry only once it is in the older half of its collection', () => {
    const recency = new LazyRecency();
    const stamps = Array.from({ length: 10 }, () => recency.next());
    // Ten entries: the newest five stay where they are when used, the older five move.
    expect(stamps.map((s) => recency.due(s, 10))).toEqual([true, true, true, true, true, false, false, false, false, false]);
    const moved = recency.next();
    expect(recency.due(moved, 10)).toBe(false);
    for (let i = 0; i < 5; i++) recency.next();
    expect(recency.due(moved, 10)).toBe(true);
  });

  it('never moves the only entry of a collection', () => {
    const recency = new LazyRecency();
    const only = recency.next();
    for (let i = 0; i < 3; i++) recency.next();
    expect(recency.due(only, 1)).toBe(false);
    expect(recency.due(only, 2)).toBe(true);
  });
});
