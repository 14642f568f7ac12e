import { describe, expect, it } from 'vitest';
import { createEntryCache } from '../../src/server/data-sources/cache.js';
import type { EntryRecord } from '../../src/server/data-sources/types.js';

const entries = (n: number): EntryRecord[] =>
  Array.from({ length: n }, (_, i) => ({ id: i + 1, dataSourceId: 1, data: { i }, order: i, createdAt: '', updatedAt: '' }));

describe('entry cache budget (limits.entryCacheEntries)', () => {
  it('never keeps a data source larger than the budget', () => {
    const cache = createEntryCache({ maxEntries: 10 });
    cache.set(1, 1, entries(11));
    expect(cache.peek(1, 1)).toBeUndefined();
    cache.set(2, 1, entries(10)); // exactly the budget
    expect(cache.peek(2, 1)).toHaveLength(10);
    // A larger state of a cached data source drops it rather than keep the stale one.
    cache.set(2, 2, entries(12));
    expect(cache.peek(2, 1)).toBeUndefined();
    expect(cache.peek(2, 2)).toBeUndefined();
  });

  it('evicts the least recently used data sources until the entries fit, counting each at least 1', () => {
    const cache = createEntryCache({ maxEntries: 10 });
    cache.set(1, 1, entries(4)); // 4
    cache.set(2, 1, entries(4)); // 8
    cache.set(3, 1, []); // 9: an empty data source counts 1
    cache.set(4, 1, []); // 10
    expect([1, 2, 3, 4].map((id) => cache.peek(id, 1) !== undefined)).toEqual([true, true, true, true]);
    cache.set(5, 1, []); // 11: the oldest (1) goes
    expect([1, 2, 3, 4, 5].map((id) => cache.peek(id, 1) !== undefined)).toEqual([false, true, true, true, true]);
    cache.drop(2);
    cache.set(6, 1, entries(7)); // 3 + 7 = 10
    expect([3, 4, 5, 6].map((id) => cache.peek(id, 1) !== undefined)).toEqual([true, true, true, true]);
  });

  it('keeps nothing with a budget of 0', () => {
    const cache = createEntryCache({ maxEntries: 0 });
    cache.set(1, 1, []);
    expect(cache.peek(1, 1)).toBeUndefined();
  });
});
