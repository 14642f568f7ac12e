import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/**
 * The time budget of the selects and aggregations the database runs (src/server/data-sources/sql/time-budget.ts,
 * docs/data-sources.md "Time budgets"), over HTTP on the real server. A `where` of 200 tests on an array path
 * over 2,000 entries of 100-element arrays walks every array 200 times per entry: seconds to minutes of SQL on
 * either engine (SQLite: ~3 ms per entry, PostgreSQL: more), against a budget of 1,500 ms, so no timing is raced: the
 * plain requests beside them get the same budget, which holds for them on a machine loaded far past its cores (500 ms
 * did not, at a load average of 10 on 2 cores).
 * Without the budget these requests run to their end and answer 200: the tests then fail (or time out).
 * SQLite runs them twice: on a database file, where the reads run on reader threads (db/sqlite-readers/), and in
 * memory, where they run on the main thread.
 */
const BUDGET_MS = 1_500;
const SLOW_ENTRIES = 2000;
const slowWhere = { $or: Array.from({ length: 200 }, (_, i) => ({ tags: `x${i}` })) };
const slowBodies = {
  select: { where: slowWhere, limit: 5 },
  count: { where: slowWhere, limit: 1, includePagination: true },
  aggregate: { where: slowWhere, aggregate: [{ $group: { _id: '$data.k', n: { $sum: 1 } } }] },
};

const STORAGES = testEngine === 'postgres' ? (['postgres'] as const) : (['sqlite file', 'sqlite memory'] as const);

describe.each(STORAGES)('time budget of SQL selects and aggregations (%s)', (storage) => {
  let b: TestBackend;
  let dir: string | undefined;
  let slow: number;
  let plain: number;

  const query = (ds: number, json: unknown) => b.api('POST', `/v1/data-sources/${ds}/data/query`, { json });
  const create = async (name: string) =>
    (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name } })).body.dataSource.id as number;
  const expectTimeout = (r: { status: number; body: any }) => {
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('QUERY_TIMEOUT');
    // The SQL path's refusal (the JS evaluator's says "where: matching took longer").
    expect(r.body.error.message).toMatch(new RegExp(`database took longer than ${BUDGET_MS} ms \\(limits\\.aggregateTimeoutMs\\)`));
  };
  const expectPlainAnswers = async () => {
    const select = await query(plain, { where: { city: 'Oslo' }, order: [['order', 'ASC']], includePagination: true });
    expect(select.status).toBe(200);
    expect(select.body.entries.map((e: { data: unknown }) => e.data)).toEqual([
      { city: 'Oslo', n: 1 },
      { city: 'Oslo', n: 3 },
    ]);
    expect(select.body.pagination.total).toBe(2);
    const grouped = await query(plain, { aggregate: [{ $group: { _id: '$data.city', n: { $sum: '$data.n' } } }, { $sort: { _id: 1 } }] });
    expect(grouped.status).toBe(200);
    expect(grouped.body.entries).toEqual([
      { _id: 'Bergen', n: 2 },
      { _id: 'Oslo', n: 4 },
    ]);
  };

  beforeAll(async () => {
    if (storage === 'sqlite file') dir = mkdtempSync(join(tmpdir(), 'iar-budget-'));
    b = await startTestBackend({ dataDir: dir, limits: { aggregateTimeoutMs: BUDGET_MS } });
    slow = await create('SlowSql');
    // Every document differs (`n`): with only the 7 documents of `k`, PostgreSQL, once its statistics say so,
    // memoizes the lateral parse and test of a page per distinct `data` and answers the slow select in ~0.3 s.
    const entries = Array.from({ length: SLOW_ENTRIES }, (_, i) => ({ k: i % 7, n: i, tags: Array.from({ length: 100 }, (_, j) => j) }));
    expect((await b.api('POST', `/v1/data-sources/${slow}/data`, { json: { entries } })).status).toBe(200);
    plain = await create('PlainSql');
    const rows = [
      { city: 'Oslo', n: 1 },
      { city: 'Bergen', n: 2 },
      { city: 'Oslo', n: 3 },
    ];
    expect((await b.api('POST', `/v1/data-sources/${plain}/data`, { json: { entries: rows } })).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await b?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a slow select, count or aggregate in SQL answers 422 QUERY_TIMEOUT; plain requests right after answer 200', async () => {
    for (const body of Object.values(slowBodies)) {
      expectTimeout(await query(slow, body));
      await expectPlainAnswers();
    }
  }, 120_000);

  it('a plain request issued beside a slow one answers 200 with its data', async () => {
    const [late, ...answers] = await Promise.all([query(slow, slowBodies.aggregate), query(plain, { where: { city: 'Bergen' } }), query(slow, { limit: 1 })]);
    expectTimeout(late);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    expect(answers[0]!.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ city: 'Bergen', n: 2 }]);
    expect(answers[1]!.body.entries).toHaveLength(1);
  }, 120_000);

  it('the JS evaluator stops matching a small data source whose every entry is costly', async () => {
    // `$elemMatch` is not translated to SQL (docs/sql.md): sift matches each of the 100 elements against each of the
    // 10,000 values, ~100 ms per entry, so 300 entries take half a minute when the clock is read every 1,024. (A
    // plain `$in` over an array of scalars is matched element-wise by a Set: fast, see where-fast.ts.)
    const costly = await create('CostlyJs');
    const entries = Array.from({ length: 300 }, (_, i) => ({ tags: Array.from({ length: 100 }, (_, j) => `t${i}-${j}`) }));
    expect((await b.api('POST', `/v1/data-sources/${costly}/data`, { json: { entries } })).status).toBe(200);
    const r = await query(costly, { where: { tags: { $elemMatch: { $in: Array.from({ length: 10_000 }, (_, i) => `v${i}`) } } }, limit: 5 });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('QUERY_TIMEOUT');
    expect(r.body.error.message).toMatch(new RegExp(`^where: matching took longer than ${BUDGET_MS} ms`));
    await expectPlainAnswers();
  }, 120_000);

  it('more timeouts than the pool has connections leave every connection usable', async () => {
    // The PostgreSQL pool holds 10 connections: a cancelled statement's connection that did not go back (or went
    // back inside its aborted transaction) would leave the plain requests below waiting or failing.
    for (let i = 0; i < 12; i++) expectTimeout(await query(slow, i % 2 === 0 ? slowBodies.select : slowBodies.aggregate));
    await Promise.all(Array.from({ length: 12 }, () => expectPlainAnswers()));
  }, 180_000);
});
