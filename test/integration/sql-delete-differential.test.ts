import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileWhere } from '../../src/server/data-sources/engine.js';
import type { EntryRecord } from '../../src/server/data-sources/types.js';
import { translateWhere } from '../../src/server/data-sources/sql/where.js';
import { entryData, seededRandom, where } from '../helpers/query-generator.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/**
 * Query deletes found by the database (src/server/data-sources/sql-delete.ts): with the entry cache off
 * (`limits.entryCacheEntries: 0`, as for a data source larger than the budget), every delete whose `where`
 * translates runs in SQL. Each generated delete is checked against the reference JS matcher (compileWhere)
 * over the entries as they were just before: same count, same entries left. Runs on SQLite, and on PostgreSQL
 * with IAR_TEST_DB=postgres.
 */
const SEED = 20261124;
const DELETES = testEngine === 'postgres' ? 150 : 300;

describe(`query deletes in SQL, differential against the JS matcher (${testEngine})`, () => {
  let b: TestBackend;
  let now = Date.parse('2024-03-01T08:00:00.000Z');
  beforeAll(async () => {
    b = await startTestBackend({ clock: () => now, limits: { entryCacheEntries: 0 } });
  });
  afterAll(() => b?.close());

  const list = async (ds: number): Promise<EntryRecord[]> => {
    const res = await b.api('GET', `/v1/data-sources/${ds}/data`);
    expect(res.status).toBe(200);
    return res.body.entries as EntryRecord[];
  };

  it(`deletes what the JS matcher matches, for ${DELETES} generated wheres`, async () => {
    const rng = seededRandom(SEED);
    const ds = (await b.client.DataSources.create({ name: 'DeleteDifferential' })).id;
    const refill = async () => {
      now += 61_000;
      const res = await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { append: true, entries: Array.from({ length: 40 }, () => entryData(rng)) } });
      expect(res.status).toBe(200);
      for (let i = 0; i < 3; i++) {
        now += 7_000;
        expect((await b.api('PUT', `/v1/data-sources/${ds}/data`, { json: entryData(rng) })).status).toBe(201);
      }
    };
    await refill();
    let before = await list(ds);
    let translated = 0;
    let deleted = 0;
    for (let i = 0; i < DELETES; i++) {
      if (before.length < 25) {
        await refill();
        before = await list(ds);
      }
      const stamps = [...new Set(before.flatMap((e) => [e.createdAt, e.updatedAt]))].sort();
      const body = { type: 'delete', where: where(rng, { maxId: Math.max(...before.map((e) => e.id)), times: [...stamps, '2024-03-01', '2030-01-01'] }) };
      if (translateWhere(body.where) !== null) translated++;
      const test = compileWhere(body.where);
      const expected = before.filter((e) => !test(e)).map((e) => e.id);
      const res = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: body });
      const after = await list(ds);
      expect({ i, body, status: res.status, answer: res.body, left: after.map((e) => e.id) }).toEqual({
        i,
        body,
        status: 200,
        answer: { deletedCount: before.length - expected.length },
        left: expected,
      });
      deleted += before.length - expected.length;
      before = after;
    }
    // Most deletes ran in SQL, and they deleted something.
    expect(translated).toBeGreaterThan(DELETES * 0.5);
    expect(deleted).toBeGreaterThan(DELETES);
  }, 240_000);

  it('a delete SQL does not take is matched over pages of entries (scan-delete.ts), oldest first', async () => {
    const ds = (await b.client.DataSources.create({ name: 'DeleteScanned' })).id;
    // 4,500 entries: three pages of SCAN_PAGE (2,000); every 7th matches, on every page.
    const entries = Array.from({ length: 4_500 }, (_, i) => ({ i, s: i % 7 === 0 ? `k${i}` : `v${i}` }));
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    const where = { s: { $regex: '^k' } };
    expect(translateWhere(where)).toBeNull();
    const res = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { type: 'delete', where } });
    expect(res.body).toEqual({ deletedCount: Math.ceil(4_500 / 7) });
    const left = (await list(ds)).map((e) => (e.data as { i: number }).i).sort((x, y) => x - y);
    expect(left).toEqual(entries.filter((e) => e.i % 7 !== 0).map((e) => e.i));
    // The delete log records the entries oldest first, as the other paths do.
    const logs = await b.api('GET', `/v1/data-sources/${ds}/logs?type=dataSource.entry.delete&limit=1000`, { token: b.server.bootstrap.studioToken });
    expect(logs.status).toBe(200);
    const ids = (logs.body.logs as { dataSourceEntryId: number; data: { columns: string[] } }[]).reverse();
    expect(ids).toHaveLength(Math.ceil(4_500 / 7));
    expect(ids.map((l) => l.dataSourceEntryId)).toEqual(ids.map((l) => l.dataSourceEntryId).sort((x, y) => x - y));
    expect(ids[0]!.data.columns).toEqual(['i', 's']);
  }, 120_000);

  it('a delete whose where tests an indexed path reads its candidates from the index', async () => {
    const ds = (await b.client.DataSources.create({ name: 'DeleteIndexed' })).id;
    // 4,500 entries; `g` is indexed, with rank 3 values (numeric strings, arrays) among them.
    const g = (i: number) => (i % 50 === 0 ? String(i % 10) : i % 70 === 0 ? [3, 99] : i % 10);
    const entries = Array.from({ length: 4_500 }, (_, i) => ({ i, g: g(i), s: i % 3 === 0 ? `k${i}` : `v${i}` }));
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    expect((await b.api('PUT', `/v1/data-sources/${ds}`, { json: { definition: { indexes: ['g'] } } })).status).toBe(200);
    const where = { g: 3, s: { $regex: '^k' } };
    expect(translateWhere(where)).toBeNull();
    const test = compileWhere(where);
    const before = await list(ds);
    const expected = before.filter((e) => !test(e)).map((e) => e.id);
    const res = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { type: 'delete', where } });
    expect(res.body).toEqual({ deletedCount: before.length - expected.length });
    expect(before.length - expected.length).toBeGreaterThan(100);
    expect((await list(ds)).map((e) => e.id).sort((x, y) => x - y)).toEqual(expected.sort((x, y) => x - y));
  });

  it('a delete of a value the database cannot read (a NUL in a string) is decided by the JS matcher', async () => {
    const ds = (await b.client.DataSources.create({ name: 'DeleteNul' })).id;
    const res = await b.api('POST', `/v1/data-sources/${ds}/data`, {
      json: {
        entries: [
          { s: 'a\u0000b', n: 1 },
          { s: 'c', n: 2 },
          { s: 'd', n: 1 },
        ],
      },
    });
    expect(res.status).toBe(200);
    const gone = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { type: 'delete', where: { n: 1 } } });
    expect(gone.body).toEqual({ deletedCount: 2 });
    expect((await list(ds)).map((e) => e.data)).toEqual([{ s: 'c', n: 2 }]);
  });

  it('a scanned select and delete whose candidates the database cannot read (a NUL) are decided by the JS matcher', async () => {
    const ds = (await b.client.DataSources.create({ name: 'ScanNul' })).id;
    const entries = [
      { s: 'a\u0000b', n: 1 },
      { s: 'c', n: 2 },
      { s: 'd', n: 1 },
      { s: 'e', n: 1 },
    ];
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    // `n` translates and picks the candidates; `$regex` does not (the JS evaluator runs the whole where on them).
    const where = { n: 1, s: { $regex: '^[ad]' } };
    expect(translateWhere(where)).toBeNull();
    const selected = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { where, order: [['id', 'ASC']], includePagination: true } });
    expect(selected.status).toBe(200);
    expect(selected.body.entries.map((e: EntryRecord) => e.data)).toEqual([entries[0], entries[2]]);
    expect(selected.body.pagination.total).toBe(2);
    const gone = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { type: 'delete', where } });
    expect(gone.body).toEqual({ deletedCount: 2 });
    expect((await list(ds)).map((e) => e.data).sort((x, y) => String(x.s).localeCompare(String(y.s)))).toEqual([entries[1], entries[3]]);
  });
});
