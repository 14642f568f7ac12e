import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { DEFAULT_AGGREGATE_LIMITS } from '../../src/server/data-sources/query/aggregate.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import { runSqlAggregate } from '../../src/server/data-sources/sql/aggregate.js';
import { planSqlAggregate } from '../../src/server/data-sources/sql/aggregate-plan.js';
import { indexedGroupPath, runIndexedGroup } from '../../src/server/data-sources/sql/aggregate-indexed.js';
import { aggregateBody, entryData, seededRandom } from '../helpers/aggregate-generator.js';
import { testEngine, type TestBackend } from '../helpers/server.js';
import { startSqlBackend, storedEntries } from '../helpers/sql-backend.js';

/**
 * The SQL translation of aggregations (src/server/data-sources/sql/aggregate*.ts, docs/sql.md "Aggregations")
 * against the reference JS evaluator (runQuery, i.e. mingo): generated pipelines ([$match], $group with
 * $count/$sum/$avg/$min/$max, then $sort/$skip/$limit/$project) over generated entries of mixed types, each run
 * both ways on the same rows. Every answer the SQL path gives must be the JS answer; the SQL path may decline
 * (null: the server then runs the JS evaluator), but must not decline most of them. SQLite, and PostgreSQL with
 * IAR_TEST_DB=postgres.
 */
const SEED = 20261124;
const QUERIES = testEngine === 'postgres' ? 250 : 400;
/** Paths with a declared expression index: counting groups on them read the index alone (SQLite). */
const INDEXED = ['c', 'g', 't', 'b', 'v', 'h', 'k', 'o.x', 'nope'];
const noJoins = { load: async () => [] as EntryRecord[] };
const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe(`SQL translation of aggregations, differential against mingo (${testEngine})`, () => {
  let b: TestBackend;
  let db: Database;
  let dsId: number;
  let entries: EntryRecord[];
  const cleanup: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    ({ b, db } = await startSqlBackend('iar_aggdiff', cleanup));
    const rng = seededRandom(SEED);
    const ds = await b.client.DataSources.create({ name: 'AggregateDifferential' });
    dsId = ds.id;
    const conn = await b.client.DataSources.connect(ds.id);
    await conn.import(Array.from({ length: 260 }, () => entryData(rng)));
    const appended = await b.api('POST', `/v1/data-sources/${dsId}/data`, {
      json: { entries: Array.from({ length: 120 }, () => entryData(rng)), append: true },
    });
    expect(appended.status).toBe(200);
    for (let i = 0; i < 25; i++) await conn.insert(entryData(rng));
    const ids = (await db.all<{ id: number }>('SELECT id FROM data_source_entries WHERE data_source_id = ? ORDER BY id', [dsId])).map((r) => r.id);
    for (let i = 0; i < 30; i++) await conn.update(ids[Math.floor(rng() * ids.length)]!, entryData(rng));
    entries = await storedEntries(db, dsId);
    const declared = await b.api('PUT', `/v1/data-sources/${dsId}`, { json: { definition: { indexes: INDEXED } } });
    expect(declared.status).toBe(200);
    // Ties on `order` (import and append give every entry one), so first appearance also depends on ids.
    expect(new Set(entries.map((e) => e.order)).size).toBeLessThan(entries.length);
  });

  afterAll(async () => {
    await db?.close();
    await b?.close();
    for (const fn of cleanup.reverse()) await fn();
  });

  it('answers the same over HTTP, where the server picks SQL or the JS evaluator', async () => {
    const rng = seededRandom(SEED + 2);
    const bounds = { maxId: Math.max(...entries.map((e) => e.id)), times: ['2024-01-01'] };
    for (let i = 0; i < 60; i++) {
      const body = aggregateBody(rng, bounds);
      const res = await b.api('POST', `/v1/data-sources/${dsId}/data/query`, { json: body });
      let want: unknown;
      try {
        want = { status: 200, answer: plain(await runQuery(entries, compileQuery(body).body, noJoins)) };
      } catch (error) {
        want = {
          status: (error as { status: number }).status,
          answer: { error: { code: (error as { code: string }).code, message: (error as Error).message } },
        };
      }
      expect({ i, body, status: res.status, answer: res.body }).toEqual({ i, body, ...(want as object) });
    }
  });

  it('reads an own `__proto__` key as a column like any other, in SQL and in mingo (found by review)', async () => {
    const ds = (await b.client.DataSources.create({ name: 'ProtoKey' })).id;
    // JSON.parse keeps `__proto__` as an own key; mingo's own clone made it the copy's prototype.
    const rows = ['{"__proto__": {"at": 7, "name": "p"}, "k": 1}', '{"at": 2, "name": "a", "k": 1}', '{"k": 2}'];
    const stored = await b.api('POST', `/v1/data-sources/${ds}/data`, {
      body: `{"entries": [${rows.join(', ')}]}`,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(stored.status).toBe(200);
    const data = await storedEntries(db, ds);
    const sorted = (groups: unknown) => (groups as { _id: unknown }[]).map((g) => JSON.stringify(g)).sort();
    const cases = [
      {
        body: { aggregate: [{ $group: { _id: '$data.name', n: { $count: {} } } }] },
        want: [
          { _id: 'a', n: 1 },
          { _id: null, n: 2 },
        ],
      },
      {
        body: { aggregate: [{ $match: { 'data.k': 1 } }, { $group: { _id: '$data.at', n: { $count: {} } } }] },
        want: [
          { _id: 2, n: 1 },
          { _id: null, n: 1 },
        ],
      },
      { body: { aggregate: [{ $match: { 'data.at': 7 } }, { $group: { _id: null, n: { $count: {} } } }] }, want: [] },
    ];
    for (const { body, want } of cases) {
      const compiled = compileQuery(body);
      const sql = await runSqlAggregate(db, testEngine, ds, planSqlAggregate(compiled)!, DEFAULT_AGGREGATE_LIMITS);
      const mingo = (await runQuery(data, compiled.body, noJoins)).entries;
      expect({ body, sql: sorted(sql), mingo: sorted(mingo) }).toEqual({ body, sql: sorted(want), mingo: sorted(want) });
    }
    expect((await b.api('DELETE', `/v1/data-sources/${ds}`)).status).toBe(200);
  });

  it('charges the groups to the aggregate budget as mingo does: 422 AGGREGATE_TOO_LARGE on both paths', async () => {
    const body = { aggregate: [{ $group: { _id: { v: '$data.v', t: '$data.t' }, n: { $sum: 1 } } }] };
    const compiled = compileQuery(body);
    const plan = planSqlAggregate(compiled)!;
    const limits = { bytes: 4_000, timeoutMs: 5_000 };
    const code = (promise: Promise<unknown>) =>
      promise.then(
        () => 'answered',
        (error: { code?: string }) => error.code,
      );
    // Within the default budget the database answers (many groups), past a small one both paths refuse.
    const groups = await runSqlAggregate(db, testEngine, dsId, plan, DEFAULT_AGGREGATE_LIMITS);
    expect(groups?.length).toBeGreaterThan(100);
    expect(await code(runSqlAggregate(db, testEngine, dsId, plan, limits))).toBe('AGGREGATE_TOO_LARGE');
    expect(await code(runQuery(entries, compiled.body, noJoins, limits))).toBe('AGGREGATE_TOO_LARGE');
  });

  it(`answers ${QUERIES} generated aggregations exactly as mingo does, or declines`, async () => {
    const rng = seededRandom(SEED + 1);
    const bounds = { maxId: Math.max(...entries.map((e) => e.id)), times: ['2024-01-01'] };
    const indexed = new Set(INDEXED);
    let fromIndex = 0;
    let planned = 0;
    let answered = 0;
    let multiGroup = 0;
    const exercised = new Map<string, number>();
    for (let i = 0; i < QUERIES; i++) {
      const body = aggregateBody(rng, bounds);
      const compiled = compileQuery(body);
      const plan = planSqlAggregate(compiled);
      if (!plan) continue;
      planned++;
      let got: unknown[] | null;
      try {
        got = await runSqlAggregate(db, testEngine, dsId, plan, DEFAULT_AGGREGATE_LIMITS);
      } catch (error) {
        // A statement the database refuses (PostgreSQL: a value that is not valid jsonb) goes to mingo.
        expect({ i, body, error: String(error) }).toEqual({ i, body, error: expect.stringMatching(/jsonb|unsupported Unicode|overflow/) });
        continue;
      }
      // The same plan where the key's index may answer (counting groups over every entry, SQLite).
      const indexPath = indexedGroupPath(testEngine, plan, indexed);
      const viaIndex = indexPath && (await runIndexedGroup(db, dsId, indexPath, 1e6));
      const withIndex = await runSqlAggregate(db, testEngine, dsId, plan, DEFAULT_AGGREGATE_LIMITS, indexed);
      if (viaIndex) fromIndex++;
      const want = await runQuery(entries, compiled.body, noJoins);
      if (withIndex !== null || got !== null) expect({ i, body, answer: plain(withIndex) }).toEqual({ i, body, answer: plain(want.entries) });
      if (got === null) continue;
      answered++;
      expect({ i, body, answer: plain(got) }).toEqual({ i, body, answer: plain(want.entries) });
      if (got.length > 1) multiGroup++;
      const tags = [
        plan.key.kind,
        ...plan.accumulators.map((a) => a.op),
        plan.matchPaths.length > 0 ? '$match' : 'no $match',
        plan.tail.length > 0 ? 'tail' : 'no tail',
      ];
      for (const tag of tags) exercised.set(tag, (exercised.get(tag) ?? 0) + 1);
    }
    console.log(
      `sql-aggregate-differential (${testEngine}): ${planned}/${QUERIES} planned, ${answered} answered by SQL (${multiGroup} with several groups, ${fromIndex} read from an index); exercised:`,
      Object.fromEntries([...exercised].sort()),
    );
    // The test must not pass by translating nothing.
    expect(planned).toBeGreaterThan(QUERIES * 0.7);
    expect(answered).toBeGreaterThan(planned * 0.4);
    expect(multiGroup).toBeGreaterThan(answered * 0.3);
    if (testEngine === 'sqlite') expect(fromIndex).toBeGreaterThanOrEqual(10);
    for (const tag of ['null', 'path', 'object', 'count', 'times', 'sum', 'avg', 'min', 'max', '$match', 'tail']) {
      expect(exercised.get(tag) ?? 0, tag).toBeGreaterThanOrEqual(8);
    }
  }, 300_000);
});
