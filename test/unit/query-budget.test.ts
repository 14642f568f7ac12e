import { describe, expect, it } from 'vitest';
import { filterEntries, outsideBudget, startBudget } from '../../src/server/data-sources/query/filter-entries.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord, QueryBody } from '../../src/server/data-sources/query/types.js';

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

  it("a timeout after the database's attempt says how much of the budget that attempt spent", async () => {
    const entries = Array.from({ length: 64 }, (_, i) => entry(i));
    const spent = { timeoutMs: 5_000, deadline: Date.now() - 1, databaseMs: 4_990 };
    expect(() => filterEntries(entries, () => true, spent)).toThrow(
      expect.objectContaining({
        code: 'QUERY_TIMEOUT',
        message:
          "where: matching took longer than 5000 ms (limits.aggregateTimeoutMs), 4990 ms of them in the database's attempt before the JS evaluator took the query",
      }),
    );
    // A few ms (a query the translation declined at once) are not named.
    expect(() => filterEntries(entries, () => true, { ...spent, databaseMs: 3 })).toThrow(
      expect.objectContaining({ message: 'where: matching took longer than 5000 ms (limits.aggregateTimeoutMs)' }),
    );
    // Seven entries (the `where` checks the clock every 8), 700 documents unwound: the aggregate is what times out.
    const unwound = entries.slice(0, 7).map((e) => ({ ...e, data: { xs: Array.from({ length: 100 }, (_, j) => j) } }));
    const body = { type: 'select', aggregate: [{ $unwind: '$data.xs' }, { $group: { _id: null, n: { $sum: 1 } } }] } as QueryBody;
    const limits = { bytes: 64 * 2 ** 20, timeoutMs: 5_000 };
    await expect(runQuery(unwound, body, { load: async () => [] }, limits, spent)).rejects.toMatchObject({
      code: 'QUERY_TIMEOUT',
      message:
        "aggregate: took longer than 5000 ms (limits.aggregateTimeoutMs), 4990 ms of them in the database's attempt before the JS evaluator took the query",
    });
  });

  it('an aggregate ending a query has what is left of the query budget, not a fresh one', async () => {
    // Seven entries (the `where` checks the clock every 8: not here), 700 documents unwound: the aggregate's checks run.
    const entries = Array.from({ length: 7 }, (_, i) => ({ ...entry(i), data: { n: i, xs: Array.from({ length: 100 }, (_, j) => j) } }));
    const body = { type: 'select', aggregate: [{ $unwind: '$data.xs' }, { $group: { _id: null, n: { $sum: 1 } } }] } as QueryBody;
    const limits = { bytes: 64 * 2 ** 20, timeoutMs: 5_000 };
    const noJoins = { load: async () => [] };
    expect((await runQuery(entries, body, noJoins, limits, startBudget(5_000))).entries).toEqual([{ _id: null, n: 700 }]);
    // The query's time is spent (e.g. by the database's attempt before it gave up): the aggregate stops too.
    await expect(runQuery(entries, body, noJoins, limits, { timeoutMs: 5_000, deadline: Date.now() - 1 })).rejects.toMatchObject({
      status: 422,
      code: 'QUERY_TIMEOUT',
      message: 'aggregate: took longer than 5000 ms (limits.aggregateTimeoutMs)',
    });
  });
});
