import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import { planSqlSelect, runSqlSelect, type SqlSelectPlan } from '../../src/server/data-sources/sql/select.js';
import { amountValue, joinQueryBody, keyedEntry, keyValue } from '../helpers/join-generator.js';
import { seededRandom } from '../helpers/query-generator.js';
import { testEngine, type TestBackend } from '../helpers/server.js';
import { startSqlBackend } from '../helpers/sql-backend.js';

/**
 * Joins translated to SQL (src/server/data-sources/sql/joins.ts: `has`/`count`/`sum`/`required` on one key pair or
 * a composite key of several) against
 * the reference JS evaluator (runQuery and query/joins.ts): a parent and a joined data source whose key columns mix
 * numbers, numeric strings, text, booleans, null, missing, arrays and objects; generated selects with 1-2 joins,
 * each run both ways on the same rows: the same entries with the same `joins.<Name>` values, and the same count.
 * The backend's entry cache is off and a join may keep at most JOIN_ENTRIES joined entries: the JS path answers
 * 422 JOIN_TOO_LARGE past that, so an answer over HTTP shows which path ran.
 */
const SEED = 20261127;
const QUERIES = testEngine === 'postgres' ? 300 : 600;
const HTTP_QUERIES = testEngine === 'postgres' ? 60 : 100;
const JOIN_ENTRIES = 40;

describe(`SQL translation of joins, differential against the JS evaluator (${testEngine})`, () => {
  let b: TestBackend;
  let db: Database;
  let parentId: number;
  let child: { id: number; name: string };
  let parents: EntryRecord[];
  let children: EntryRecord[];
  let bounds: { maxId: number; times: string[] };
  const cleanup: (() => Promise<void> | void)[] = [];

  const readAll = async (dsId: number): Promise<EntryRecord[]> => {
    const rows = await db.all<{ id: number; data: string; sort_order: number; created_at: string; updated_at: string }>(
      'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id',
      [dsId],
    );
    return rows.map((r) => ({ id: r.id, dataSourceId: dsId, data: JSON.parse(r.data), order: r.sort_order, createdAt: r.created_at, updatedAt: r.updated_at }));
  };
  const loader = { load: async () => children };

  beforeAll(async () => {
    let now = Date.parse('2024-03-01T08:00:00.000Z');
    ({ b, db } = await startSqlBackend('iar_sqljoin', cleanup, { clock: () => (now += 1000), limits: { entryCacheEntries: 0, joinEntries: JOIN_ENTRIES } }));
    const rng = seededRandom(SEED);
    const parentDs = await b.client.DataSources.create({ name: 'Parents' });
    parentId = parentDs.id;
    const childDs = await b.client.DataSources.create({ name: 'Children' });
    child = { id: childDs.id, name: 'Children' };
    const parentConn = await b.client.DataSources.connect(parentId);
    await parentConn.import(Array.from({ length: 220 }, () => keyedEntry(rng, ['pk', 'pk2'])));
    const parentIds = (await readAll(parentId)).map((e) => e.id);
    const childConn = await b.client.DataSources.connect(child.id);
    await childConn.import(
      Array.from({ length: 260 }, () => {
        const data = keyedEntry(rng, ['ck', 'ck2']);
        const pid = keyValue(rng, parentIds);
        if (pid.value !== undefined) data.pid = pid.value;
        data.plain = data.plain === true && pid.plain;
        const amount = amountValue(rng, data.plain === true);
        if (amount !== undefined) data.amount = amount;
        const rough = amountValue(rng, data.plain === true, true);
        if (rough !== undefined) data.rough = rough;
        return data;
      }),
    );
    // Some parents keyed on a child's id (`on: { pk: 'id' }`), as a number or a numeric string.
    const childIds = (await readAll(child.id)).map((e) => e.id);
    for (let i = 0; i < 30; i++) {
      const id = parentIds[Math.floor(rng() * parentIds.length)]!;
      const data = keyedEntry(rng, ['pk2']);
      const target = childIds[Math.floor(rng() * childIds.length)]!;
      data.pk = rng() < 0.5 ? target : String(target);
      await parentConn.update(id, data);
    }
    parents = await readAll(parentId);
    children = await readAll(child.id);
    bounds = { maxId: Math.max(...parents.map((e) => e.id)), times: [...new Set(parents.map((e) => e.createdAt))].sort() };
  });

  afterAll(async () => {
    await db?.close();
    await b?.close();
    for (const fn of cleanup.reverse()) await fn();
  });

  /** The plan with its joined data sources resolved (as sql-query.ts does: every join here reads `Children`). */
  const resolved = (plan: SqlSelectPlan): SqlSelectPlan => ({ ...plan, joins: plan.joins.map((join) => ({ ...join, dataSourceId: child.id })) });
  /** runSqlSelect's page shaped as sql-query.ts shapes it (no `attributes` here). */
  const viaSql = async (plan: SqlSelectPlan) => {
    const got = await runSqlSelect(db, testEngine, parentId, resolved(plan));
    if (!got) return null;
    return { entries: got.entries.map((e, i) => ({ ...e, joins: got.joins![i] })), total: got.total };
  };

  it(`answers ${QUERIES} generated joined selects exactly as runQuery does`, async () => {
    const rng = seededRandom(SEED + 1);
    const seen = { planned: 0, answered: 0, flagged: 0, required: 0, nonEmpty: 0, matched: 0, has: 0, count: 0, sum: 0, nonZeroSums: 0, byId: 0, composite: 0 };
    for (let i = 0; i < QUERIES; i++) {
      const body = joinQueryBody(rng, child, bounds);
      const compiled = compileQuery(body);
      const plan = planSqlSelect(compiled);
      if (!plan) continue;
      seen.planned++;
      const got = await viaSql(plan);
      if (!got) {
        seen.flagged++;
        continue;
      }
      seen.answered++;
      const want = await runQuery(parents, compiled.body, loader);
      expect({ query: i, body, entries: got.entries, total: got.total }).toEqual({
        query: i,
        body,
        entries: want.entries,
        total: want.pagination?.total,
      });
      if (got.entries.length > 0) seen.nonEmpty++;
      if (plan.joins.some((join) => join.required)) seen.required++;
      if (plan.joins.some((join) => [...join.parent, ...join.joined].some((column) => column.kind === 'id'))) seen.byId++;
      if (plan.joins.some((join) => join.parent.length > 1)) seen.composite++;
      for (const join of plan.joins) seen[join.mode]++;
      const sums = plan.joins.filter((join) => join.mode === 'sum').map((join) => join.name);
      if (got.entries.some((e) => sums.some((name) => e.joins![name] !== 0))) seen.nonZeroSums++;
      if (got.entries.some((e) => Object.values(e.joins!).some((v) => v === true || (typeof v === 'number' && v > 0)))) seen.matched++;
    }
    console.log(`sql-join-differential (${testEngine}):`, seen);
    // Most planned queries are answered by SQL (the rest flagged by an ambiguous key), with matches, of every kind.
    expect(seen.planned).toBeGreaterThan(QUERIES * 0.4);
    expect(seen.answered).toBeGreaterThan(seen.planned * 0.35);
    expect(seen.flagged).toBeGreaterThanOrEqual(20);
    for (const what of ['required', 'nonEmpty', 'matched', 'has', 'count', 'sum', 'byId', 'composite'] as const)
      expect(seen[what], what).toBeGreaterThanOrEqual(QUERIES / 40);
    expect(seen.nonZeroSums).toBeGreaterThanOrEqual(QUERIES / 200);
  }, 600_000);

  it(`answers ${HTTP_QUERIES} joined selects over HTTP as runQuery does, by SQL where they translate`, async () => {
    const rng = seededRandom(SEED + 2);
    let bySql = 0;
    for (let i = 0; i < HTTP_QUERIES; i++) {
      const body = joinQueryBody(rng, child, bounds);
      if (i % 3 === 0) body.attributes = ['id', 'data.pk', 'n'];
      const compiled = compileQuery(body);
      const plan = planSqlSelect(compiled);
      const translated = plan !== null && (await viaSql(plan)) !== null;
      const res = await b.api('POST', `/v1/data-sources/${parentId}/data/query`, { json: body });
      let want: unknown;
      try {
        want = { status: 200, answer: JSON.parse(JSON.stringify(await runQuery(parents, compiled.body, loader))) };
      } catch (error) {
        want = { status: (error as { status: number }).status, answer: res.body };
      }
      if (translated) bySql++;
      // The JS path keeps at most JOIN_ENTRIES joined matches: past that it refuses, SQL does not.
      if (!translated && res.status === 422) expect((res.body as { error: { code: string } }).error.code).toBe('JOIN_TOO_LARGE');
      else expect({ i, body, status: res.status, answer: res.body }).toEqual({ i, body, ...(want as object) });
    }
    expect(bySql).toBeGreaterThanOrEqual(HTTP_QUERIES * 0.15);
  }, 300_000);

  it('runs a translated join by SQL: the JS path would refuse its joined matches', async () => {
    const join = { dataSourceName: 'Children', on: { pk: 'ck' }, count: true, required: true, where: { plain: true } };
    const body = { where: { plain: true }, join: { C: join }, order: [['id', 'ASC']], limit: 5, includePagination: true };
    expect(children.filter((e) => e.data.plain === true).length).toBeGreaterThan(JOIN_ENTRIES);
    const res = await b.api('POST', `/v1/data-sources/${parentId}/data/query`, { json: body });
    const want = await runQuery(parents, compileQuery(body).body, loader);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: JSON.parse(JSON.stringify(want)) });
    expect((want.entries as unknown[]).length).toBe(5);
    // The same join with a `where` SQL does not take: the JS path, past its bound.
    const untranslated = { ...body, join: { C: { ...join, where: { plain: true, s: { $regex: '.' } } } } };
    const refused = await b.api('POST', `/v1/data-sources/${parentId}/data/query`, { json: untranslated });
    expect({ status: refused.status, code: (refused.body as { error: { code: string } }).error?.code }).toEqual({ status: 422, code: 'JOIN_TOO_LARGE' });
  });

  it('composite keys whose parts hold quotes, commas and backslashes do not run into each other', async () => {
    // Without the quoting, ('a', 'b","sc') and ('a","sb', 'c') would both be "sa","sb","sc" (found by review).
    const tuples: [string, string][] = [
      ['a', 'b","sc'],
      ['a","sb', 'c'],
      ['a', 'b'],
      ['a\\', '"b'],
      ['a\\"', 'b'],
      ['a,', 'b'],
      ['a', ',b'],
    ];
    const left = await b.client.DataSources.create({ name: 'TupleParents' });
    const right = await b.client.DataSources.create({ name: 'TupleChildren' });
    await (await b.client.DataSources.connect(left.id)).import(tuples.map(([x, y]) => ({ x, y })));
    // Each child holds one tuple, shifted: only equal tuples may meet.
    await (await b.client.DataSources.connect(right.id)).import([...tuples.slice(1), tuples[0]!].map(([x, y], i) => ({ cx: x, cy: y, i })));
    const body = {
      join: { C: { dataSourceId: right.id, on: { x: 'cx', y: 'cy' }, count: true } },
      order: [['id', 'ASC']],
      limit: 20,
      includePagination: true,
    };
    const plan = planSqlSelect(compileQuery(body));
    expect(plan?.joins[0]?.parent.length).toBe(2);
    const got = await runSqlSelect(db, testEngine, left.id, { ...plan!, joins: plan!.joins.map((join) => ({ ...join, dataSourceId: right.id })) });
    const counts = got!.joins!.map((j) => j.C);
    // Every tuple differs, so each parent meets exactly the one child with its tuple.
    expect(counts).toEqual(tuples.map(() => 1));
    const parentsHere = await readAll(left.id);
    const want = await runQuery(parentsHere, compileQuery(body).body, { load: async () => readAll(right.id) });
    expect((want.entries as { joins: { C: number } }[]).map((e) => e.joins.C)).toEqual(counts);
  });
});
