import { afterAll, beforeAll, expect, it } from 'vitest';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import { planSqlSelect, runSqlSelect, selectStatement } from '../../src/server/data-sources/sql/select.js';
import { testEngine } from '../helpers/server.js';
import { openSqlDataSource, type SqlDataSourceFixture } from '../helpers/sql-backend.js';

/**
 * The count of a counted page (sql/select.ts): a page shorter than its LIMIT gives the total (offset + its rows)
 * and the count's own read of every match runs only for a full page, or an empty one past an offset. Every case
 * answers as runQuery does, through HTTP too; on PostgreSQL the plan shows the count not run for a short page.
 */
let f: SqlDataSourceFixture;

beforeAll(async () => {
  const rows = Array.from({ length: 60 }, (_, i) => ({ n: i, g: i % 3 === 0 ? 'a' : 'b', ...(i % 20 === 7 ? { rare: true } : {}) }));
  f = await openSqlDataSource('iar_sql_count', rows, { limits: { entryCacheEntries: 0 } });
}, 60_000);

afterAll(() => f?.close());

const CASES: Record<string, unknown>[] = [
  // Short pages: 3 rare matches, from the start, past some, past all of them.
  { where: { rare: true }, limit: 20 },
  { where: { rare: true }, limit: 20, offset: 2 },
  { where: { rare: true }, limit: 20, offset: 3 },
  { where: { rare: true }, limit: 20, offset: 50 },
  { where: { rare: true }, limit: 3 },
  { where: { rare: true }, limit: 2 },
  { where: { missing: 1 }, limit: 20 },
  { where: { missing: 1 }, limit: 20, offset: 5 },
  // Full pages, and short ones at the end of many matches.
  { where: { g: 'a' }, limit: 5 },
  { where: { g: 'a' }, limit: 5, offset: 18 },
  { where: { g: 'b' }, limit: 20, offset: 30 },
  { where: { g: 'b' }, limit: 20, offset: 40 },
  { limit: 20, offset: 59 },
  { limit: 20, offset: 60 },
  { where: { n: { $gte: 10 } }, order: [['n', 'DESC']], limit: 7, offset: 45 },
  { where: { n: { $gte: 10 } }, order: [['createdAt', 'DESC']], limit: 60 },
];

it('a counted page counts as runQuery does, short or full, past the end or not', async () => {
  for (const c of CASES) {
    const body = { ...c, includePagination: true };
    const compiled = compileQuery(body);
    const plan = planSqlSelect(compiled);
    expect({ body, planned: plan !== null }).toEqual({ body, planned: true });
    const got = await runSqlSelect(f.db, testEngine, f.dsId, plan!);
    const want = await runQuery(f.entries, compiled.body, { load: async () => [] });
    expect({ body, ids: got?.entries.map((e) => e.id), total: got?.total }).toEqual({
      body,
      ids: (want.entries as EntryRecord[]).map((e) => e.id),
      total: want.pagination?.total,
    });
    const res = await f.b.api('POST', `/v1/data-sources/${f.dsId}/data/query`, { json: body });
    expect({ body, status: res.status, total: res.body.pagination?.total }).toEqual({ body, status: 200, total: want.pagination?.total });
  }
});

it('on PostgreSQL, a short page does not run the count, a full page does (EXPLAIN ANALYZE)', async () => {
  // SQLite runs the same statement; it has no per-node run counts to show it.
  if (testEngine !== 'postgres') return;
  const plan = async (body: object) => {
    const statement = selectStatement(testEngine, f.dsId, planSqlSelect(compileQuery({ ...body, includePagination: true }))!);
    const rows = await f.db.all<Record<string, string>>(`EXPLAIN (ANALYZE, COSTS OFF) ${statement.text}`, statement.params);
    return rows.map((r) => Object.values(r)[0]).join('\n');
  };
  // The full count is the only second read of data_source_entries.
  const countSkipped = /on data_source_entries[^\n]*\(never executed\)/;
  expect(await plan({ where: { rare: true }, limit: 20 })).toMatch(countSkipped);
  expect(await plan({ where: { missing: 1 }, limit: 20 })).toMatch(countSkipped);
  expect(await plan({ where: { g: 'a' }, limit: 5 })).not.toMatch(countSkipped);
  expect(await plan({ where: { rare: true }, limit: 20, offset: 50 })).not.toMatch(countSkipped);
});
