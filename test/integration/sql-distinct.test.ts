import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import { planSqlSelect, runSqlSelect } from '../../src/server/data-sources/sql/select.js';
import { testEngine, type TestBackend } from '../helpers/server.js';
import { startSqlBackend, storedEntries } from '../helpers/sql-backend.js';

/**
 * `distinct: true` run by the database (src/server/data-sources/sql/distinct.ts, docs/sql.md "Distinct rows"): the
 * keys tell values apart as canonicalKey does (1, '1', true, 'true', null, missing; 1e2 is 100), a value the keys
 * cannot compare (objects, arrays, literal dotted keys) sends the query to the JS evaluator. The entry cache holds
 * nothing here and limits.distinctRows is 5, so a distinct select the JS path answers is scanned
 * (scan-select.ts) and refused past 5 distinct rows (422 DISTINCT_TOO_LARGE): a 200 with more rows over HTTP is
 * the database's answer.
 */
const VALUES: readonly unknown[] = [1, '1', true, 'true', null, undefined, 0, false, '', 'a', 'A', 1e21, 100, 0.1, 0.30000000000000004, 'é', 'e\u0301', -7.25];
const noJoins = { load: async () => [] as EntryRecord[] };

describe(`distinct selects run by the database (${testEngine})`, () => {
  let b: TestBackend;
  let db: Database;
  let dsId: number;
  let entries: EntryRecord[];
  const cleanup: (() => unknown)[] = [];

  beforeAll(async () => {
    ({ b, db } = await startSqlBackend('iar_sqldistinct', cleanup, { limits: { entryCacheEntries: 0, distinctRows: 5 } }));
    const ds = await b.client.DataSources.create({ name: 'Values' });
    dsId = ds.id;
    const data: Record<string, unknown>[] = [];
    // Each value twice (the second one later in the order), 1e2 beside 100 and 1.0 beside 1 (JSON.stringify writes one text).
    VALUES.forEach((v, i) => data.push(v === undefined ? { n: i } : { n: i, v }, v === undefined ? { n: 100 + i } : { n: 100 + i, v }));
    data.push({ n: 200, v: 1e2 }, { n: 201, v: 1.0 });
    // g.h through objects; through an array or a scalar it is missing (attributes do not walk arrays).
    data.push({ n: 300, g: { h: 1 } }, { n: 301, g: { h: '1' } }, { n: 302, g: 5 }, { n: 303, g: [{ h: 1 }] }, { n: 304, g: { h: 1, i: 2 } });
    // Objects equal whatever their key order; a literal dotted key, which the attribute reads instead of the path.
    data.push({ n: 400, o: { a: 1, b: 2 } }, { n: 401, o: { b: 2, a: 1 } }, { n: 402, o: 3 });
    data.push({ n: 500, 'g.h': 7, g: { h: 1 } }, { n: 501, g: { h: 7 } });
    await (await b.client.DataSources.connect(ds.id)).import(data);
    entries = await storedEntries(db, dsId);
  });

  afterAll(async () => {
    await db?.close();
    await b?.close();
    for (const fn of cleanup.reverse()) await fn();
  });

  /** The statement's answer (null: flagged, the JS evaluator answers), projected as the server returns it. */
  const bySql = async (body: Record<string, unknown>) => {
    const compiled = compileQuery(body);
    const plan = planSqlSelect(compiled);
    expect(plan?.distinct, JSON.stringify(body)).toBeDefined();
    const got = await runSqlSelect(db, testEngine, dsId, plan!);
    return got && { entries: got.entries.map((e) => compiled.projection!(e)), total: got.total };
  };
  const overHttp = (body: Record<string, unknown>) => b.api('POST', `/v1/data-sources/${dsId}/data/query`, { json: body });
  const reference = async (body: Record<string, unknown>) => JSON.parse(JSON.stringify(await runQuery(entries, compileQuery(body).body, noJoins)));

  it('tells values apart type by type, missing from null, equal numbers as one', async () => {
    const body = { where: { n: { $lt: 200 } }, attributes: ['v'], order: [['data.n', 'ASC']], distinct: true, includePagination: true };
    const rows = VALUES.map((v) => ({ data: v === undefined ? {} : { v } }));
    expect(await bySql(body)).toEqual({ entries: rows, total: VALUES.length });
    const res = await overHttp(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ entries: rows, pagination: { total: VALUES.length, limit: 0, offset: 0 } });
    // 1e2 and 1.0 are the numbers 100 and 1: no new rows.
    const all = { ...body, where: { n: { $lt: 300 } } };
    expect(await bySql(all)).toEqual({ entries: rows, total: VALUES.length });
  });

  it('keeps the first row of each in the query order, then offsets, limits and counts the kept rows', async () => {
    for (const order of [[['data.n', 'DESC']], [['id', 'ASC']], [['createdAt', 'DESC']], undefined]) {
      for (const page of [{}, { limit: 4 }, { limit: 3, offset: 5 }, { offset: 16 }, { offset: 40, limit: 2 }]) {
        const body = { where: { n: { $lt: 300 } }, attributes: ['data.v', 'dataSourceId'], order, distinct: true, includePagination: true, ...page };
        const want = await reference(body);
        expect({ body, got: await bySql(body) }).toEqual({ body, got: { entries: want.entries, total: want.pagination.total } });
        const res = await overHttp(body);
        expect({ body, status: res.status, answer: res.body }).toEqual({ body, status: 200, answer: want });
      }
    }
  });

  it('reads paths as attributes do: through objects only, missing through arrays and scalars', async () => {
    const body = { where: { n: { $gte: 300, $lt: 400 } }, attributes: ['g.h', 'createdAt'], order: [['data.n', 'ASC']], distinct: true };
    const got = await bySql(body);
    expect(got?.entries).toEqual([
      { createdAt: expect.any(String), data: { g: { h: 1 } } },
      { createdAt: expect.any(String), data: { g: { h: '1' } } },
      { createdAt: expect.any(String), data: {} },
    ]);
    expect(got).toEqual({ entries: (await reference(body)).entries, total: undefined });
  });

  it('leaves objects, arrays and literal dotted keys to the JS evaluator', async () => {
    for (const body of [
      { where: { n: { $gte: 400, $lt: 500 } }, attributes: ['o'], distinct: true, includePagination: true },
      { where: { n: { $gte: 300, $lt: 400 } }, attributes: ['g'], distinct: true },
      { where: { n: { $gte: 500 } }, attributes: ['g.h'], distinct: true, order: [['data.n', 'ASC']] },
    ]) {
      expect(await bySql(body), JSON.stringify(body)).toBeNull();
      const res = await overHttp(body);
      expect({ body, status: res.status, answer: res.body }).toEqual({ body, status: 200, answer: await reference(body) });
    }
    // The objects equal whatever their key order are one row; the literal key `g.h` is read, not the path.
    expect((await overHttp({ where: { n: { $gte: 400, $lt: 500 } }, attributes: ['o'], distinct: true })).body.entries).toEqual([
      { data: { o: { a: 1, b: 2 } } },
      { data: { o: 3 } },
    ]);
    expect((await overHttp({ where: { n: { $gte: 500 } }, attributes: ['g.h'], distinct: true, order: [['data.n', 'ASC']] })).body.entries).toEqual([
      { data: { 'g.h': 7 } },
      { data: { g: { h: 7 } } },
    ]);
  });

  it('answers in SQL where the scan would hold more than limits.distinctRows rows; what it flags is scanned as before', async () => {
    // 18 distinct rows of `v`: the scan holds at most 5.
    const translated = await overHttp({ attributes: ['v'], distinct: true, limit: 3, includePagination: true });
    expect(translated.status).toBe(200);
    expect(translated.body.pagination.total).toBe(VALUES.length);
    // `v` with `o` (objects): flagged, scanned, refused.
    const flagged = await overHttp({ attributes: ['v', 'o'], distinct: true, limit: 3 });
    expect(flagged.status).toBe(422);
    expect(flagged.body.error.code).toBe('DISTINCT_TOO_LARGE');
  });
});
