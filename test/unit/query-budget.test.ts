import { describe, expect, it } from 'vitest';
import { filterEntries, outsideBudget, startBudget } from '../../src/server/data-sources/query/filter-entries.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';

const entry = (id: number): EntryRecord => ({ id, dataSourceId: 1, data: { n: id }, order: id, createdAt: '', updatedAt: '' });

describe('query time budget', () => {
  it('a load run outside the budget moves its deadline by the time the load took, also when it fails', async () => {
    const budget = startBudget(1_000);
    const before = budget.deadline;
    await outsideBudget(budget, () => new Promise((resolve) => setTimeout(resolve, 60)));
    expect(budget.deadline - before).toBeGreaterThanOrEqual(55);
    const moved = budget.deadline;
    await expect(
      outsideBudget(budget, async () => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(budget.deadline - moved).toBeGreaterThanOrEqual(25);
  });

  it('matching past the deadline is 422 QUERY_TIMEOUT naming the field; no budget never stops', () => {
    const entries = Array.from({ length: 64 }, (_, i) => entry(i));
    const spent = { timeoutMs: 5, deadline: Date.now() - 1 };
    expect(() => filterEntries(entries, () => true, spent, 'join.J.where')).toThrow(
      expect.objectContaining({ status: 422, code: 'QUERY_TIMEOUT', message: 'join.J.where: matching took longer than 5 ms (limits.aggregateTimeoutMs)' }),
    );
    expect(filterEntries(entries, (e) => e.id % 2 === 0)).toHaveLength(32);
  });
});
