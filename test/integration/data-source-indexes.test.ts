import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { indexName } from '../../src/server/data-sources/indexes.js';
import { descKey } from '../../src/server/data-sources/sql/prefilter.js';
import { planSqlSelect, selectStatement } from '../../src/server/data-sources/sql/select.js';
import { type Access, CREATED_INDEX, SEEK } from '../../src/server/data-sources/sql/walk.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/**
 * Expression indexes of data paths (issue 14, item 3; docs/sql.md "Indexes"): declared in
 * `definition.indexes`, created automatically for paths queried often, dropped with their data source; the
 * database really uses them, and answers stay those of an identical data source without indexes.
 */
const CITIES = ['Cork', 'Oslo', 'Lima', 'Kyiv'];
const row = (i: number) => ({
  name: `P${i}`,
  age: i % 7 === 0 ? String(i % 50) + 'x' : i % 50,
  address: { city: CITIES[i % 4] },
  ...(i % 11 === 0 ? { note: null } : {}),
});

describe(`data path indexes (${testEngine})`, () => {
  let b: TestBackend;
  let db: Database;
  const cleanup: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    const limits = { autoIndexAfter: 5, autoIndexesPerDataSource: 1, autoIndexScanRows: 100 };
    if (testEngine === 'postgres') {
      const pgDb = await createTestDatabase('iar_dsidx');
      cleanup.push(() => pgDb.drop());
      b = await startTestBackend({ databaseUrl: pgDb.url, limits });
      const { openPostgres } = await import('../../src/server/db/postgres.js');
      db = openPostgres({ url: pgDb.url, max: 2 });
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'iar-dsidx-'));
      cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
      b = await startTestBackend({ dataDir: dir, limits });
      const { openSqlite } = await import('../../src/server/db/sqlite.js');
      db = openSqlite({ file: join(dir, 'runtime.sqlite') });
    }
  });

  afterAll(async () => {
    await db?.close();
    await b?.close();
    for (const fn of cleanup.reverse()) await fn();
  });

  const indexNames = async () =>
    testEngine === 'postgres'
      ? (await db.all<{ name: string }>(`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'data_source_entries'`)).map((r) => r.name)
      : (await db.all<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'data_source_entries'`)).map((r) => r.name);

  /** An automatic index is built, then listed: wait for both (a bounded wait that holds on a loaded machine). */
  async function waitForAutoIndex(id: number, path: string): Promise<void> {
    const listed = async () =>
      (await indexNames()).includes(indexName(id, path)) &&
      (await db.all<{ path: string }>('SELECT path FROM data_source_indexes WHERE data_source_id = ? AND path = ?', [id, path])).length > 0;
    const deadline = Date.now() + 30_000;
    while (!(await listed()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }

  async function createWithRows(name: string, definition?: object): Promise<number> {
    const created = await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name, ...(definition ? { definition } : {}) } });
    expect(created.status).toBe(201);
    const id = created.body.dataSource.id as number;
    const imported = await b.api('POST', `/v1/data-sources/${id}/data`, { json: { entries: Array.from({ length: 400 }, (_, i) => row(i)) } });
    expect(imported.status).toBe(200);
    return id;
  }

  /** The plan's statement as the server runs it, and what the database says it does with it. */
  async function explain(dsId: number, body: object, indexed: string[], access: Access = SEEK, noSort = false): Promise<string> {
    const statement = selectStatement(testEngine, dsId, planSqlSelect(compileQuery(body))!, new Set(indexed), access);
    if (testEngine === 'postgres') {
      // A small table: the planner would rather scan; this asks whether the index can serve the query at all.
      const rows = await db.transaction(async (tx) => {
        await tx.run('SET LOCAL enable_seqscan = off');
        if (noSort) await tx.run('SET LOCAL enable_sort = off');
        return tx.all<Record<string, string>>(`EXPLAIN ${statement.text}`, statement.params);
      });
      return rows.map((r) => Object.values(r)[0]).join('\n');
    }
    const rows = await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement.text}`, statement.params);
    return rows.map((r) => r.detail).join('\n');
  }

  const query = async (dsId: number, body: object) => {
    const res = await b.api('POST', `/v1/data-sources/${dsId}/data/query`, { json: body });
    expect(res.status).toBe(200);
    return res.body as { entries: { id: number; data: unknown }[]; pagination?: { total: number } };
  };
  const same = (a: { entries: { data: unknown }[]; pagination?: unknown }) => ({ data: a.entries.map((e) => e.data), pagination: a.pagination });

  it('declared indexes are built, used, give the same answers, follow the definition and go with the data source', async () => {
    const plain = await createWithRows('Plain');
    const indexed = await createWithRows('Indexed', { indexes: ['age', 'address.city'] });
    expect(await indexNames()).toEqual(expect.arrayContaining([indexName(indexed, 'age'), indexName(indexed, 'address.city')]));
    expect(await indexNames()).not.toContain(indexName(plain, 'age'));

    const bodies = [
      { where: { age: 42 }, limit: 5 },
      { where: { age: { $gte: 45 } }, order: [['age', 'DESC']], limit: 7, includePagination: true },
      { where: { 'address.city': 'Oslo', age: { $lt: 3 } }, order: [['age', 'ASC']], limit: 10 },
      { where: { 'address.city': { $in: ['Lima', 'Cork'] } }, order: [['address.city', 'DESC']], limit: 10, offset: 3 },
      { where: { age: '7x' }, includePagination: true },
      { order: [['age', 'ASC']], limit: 10 },
      { where: { note: null, age: { $gt: 10 } }, limit: 10 },
    ];
    for (const body of bodies) expect({ body, answer: same(await query(indexed, body)) }).toEqual({ body, answer: same(await query(plain, body)) });

    if (testEngine === 'sqlite') {
      expect(await explain(indexed, { where: { age: 42 }, limit: 5 }, ['age'])).toContain(indexName(indexed, 'age'));
      expect(await explain(indexed, { where: { 'address.city': 'Oslo' }, order: [['address.city', 'ASC']], limit: 5 }, ['address.city'])).toContain(
        indexName(indexed, 'address.city'),
      );
      const ordered = await explain(indexed, { order: [['age', 'ASC']], limit: 5 }, ['age']);
      // The page walks the index in order (only the outer ORDER BY of the few page rows sorts).
      expect(ordered).toContain(`SCAN data_source_entries USING INDEX ${indexName(indexed, 'age')}`);
      expect(ordered.match(/USE TEMP B-TREE FOR ORDER BY/g) ?? []).toHaveLength(1);
      // A newest-first page walking the createdAt index (sql/walk.ts) reads it in order: nothing is sorted.
      const walked = await explain(indexed, { where: { 'address.city': 'Oslo' }, order: [['createdAt', 'DESC']], limit: 5 }, ['address.city'], {
        kind: 'walk',
        bound: '2000-01-01',
      });
      expect(walked).toContain(`USING INDEX ${CREATED_INDEX} (data_source_id=? AND created_at>?)`);
      expect(walked).not.toContain('TEMP B-TREE');
      // A counted page of one city: the index gives the default order after the key (only the outer ORDER BY sorts).
      const counted = await explain(indexed, { where: { 'address.city': 'Oslo' }, limit: 5, includePagination: true }, ['address.city']);
      expect(counted.match(/USE TEMP B-TREE FOR ORDER BY/g) ?? []).toHaveLength(1);
    } else {
      // Unanalyzed, the planner would rather sort this small table's 400 rows: can the walk avoid sorting?
      const walkedPg = await explain(indexed, { order: [['createdAt', 'DESC']], limit: 5 }, [], { kind: 'walk', bound: null }, true);
      expect(walkedPg).toContain(`Index Scan Backward using ${CREATED_INDEX}`);
      expect(walkedPg).not.toContain('Sort');
      // A page in the default order with a `where` no index serves: the order index is read until the LIMIT
      // (the fenced subquery of a full read hid it from the outer ORDER BY: 600 ms against 1.5 ms at 300k).
      for (const body of [{ where: { 'address.city': 'Oslo' }, limit: 5 }, { limit: 5 }, { where: { age: { $gt: 3 } }, order: [['id', 'DESC']], limit: 5 }]) {
        const paged = await explain(plain, body, [], SEEK, true);
        expect({ body, paged }).toEqual({
          body,
          paged: expect.stringMatching(/Limit[^\n]*\n\s+->\s+Nested Loop[^\n]*\n\s+->\s+Index Scan (Backward )?using data_source_entries_/),
        });
        expect(paged).not.toContain('Sort');
      }
      // Without a LIMIT every match is read: the fenced form (one parse per row, no lateral join per row).
      const unlimited = await explain(plain, { where: { 'address.city': 'Oslo' } }, []);
      expect(unlimited).toContain('Subquery Scan on e');
      expect(unlimited).not.toContain('Subquery Scan on j');
      // Sorting by a data path without its index: the sort keys read the row's parsed `data` (e.doc), not
      // `data::jsonb` again in each of their ten or so uses.
      const sorted = await explain(plain, { where: { 'address.city': 'Oslo' }, order: [['age', 'DESC']], limit: 5 }, []);
      expect(sorted).toMatch(/Sort Key: .*e\.doc/);
      expect(sorted).not.toMatch(/Sort Key: .*data\)::jsonb/);
      expect(await explain(indexed, { where: { age: 42 }, limit: 5 }, ['age'])).toContain(indexName(indexed, 'age'));
      expect(await explain(indexed, { where: { age: { $gte: 45 } }, order: [['age', 'DESC']], limit: 5 }, ['age'])).toContain(indexName(indexed, 'age'));
    }

    const dropped = await b.api('PUT', `/v1/data-sources/${indexed}`, { json: { definition: { indexes: ['age'] } } });
    expect(dropped.status).toBe(200);
    expect(await indexNames()).toContain(indexName(indexed, 'age'));
    expect(await indexNames()).not.toContain(indexName(indexed, 'address.city'));

    expect((await b.api('DELETE', `/v1/data-sources/${indexed}`)).status).toBe(200);
    expect((await indexNames()).filter((name) => name.startsWith(`iar_dsi_${indexed}_`))).toEqual([]);
    expect(await db.all('SELECT path FROM data_source_indexes WHERE data_source_id = ?', [indexed])).toEqual([]);
  });

  it('a descending index ([path, "DESC"]) serves an order DESC in its own order, ties included', async () => {
    const plain = await createWithRows('PlainDesc');
    const desc = await createWithRows('Desc', { indexes: ['age', ['age', 'DESC'], ['address.city', 'DESC']] });
    expect(await indexNames()).toEqual(
      expect.arrayContaining([indexName(desc, 'age'), indexName(desc, descKey('age')), indexName(desc, descKey('address.city'))]),
    );
    expect(await indexNames()).not.toContain(indexName(desc, 'address.city'));
    const bodies = [
      { where: { 'address.city': 'Oslo' }, order: [['age', 'DESC']], limit: 7, includePagination: true },
      { where: { age: { $gte: 40 } }, order: [['age', 'DESC']], limit: 9, offset: 4 },
      { order: [['address.city', 'DESC']], limit: 12, offset: 30 },
      {
        where: { age: { $lt: 5 } },
        order: [
          ['address.city', 'DESC'],
          ['age', 'ASC'],
        ],
        limit: 20,
      },
      { where: { 'address.city': { $in: ['Lima', 'Cork'] } }, order: [['age', 'ASC']], limit: 10 },
    ];
    for (const body of bodies) expect({ body, answer: same(await query(desc, body)) }).toEqual({ body, answer: same(await query(plain, body)) });
    const indexed = ['age', descKey('age'), descKey('address.city')];
    const page = { where: { 'address.city': 'Oslo' }, order: [['age', 'DESC']], limit: 5 };
    if (testEngine === 'sqlite') {
      // Walked forward in the page's order: nothing sorted but the outer ORDER BY of the few page rows.
      const walked = await explain(desc, page, indexed);
      expect(walked).toContain(`SCAN data_source_entries USING INDEX ${indexName(desc, descKey('age'))}`);
      expect(walked.match(/TEMP B-TREE/g) ?? []).toHaveLength(1);
      // A path with only its descending index: the page and the probe for rank 3 values both go through it
      // (found by review: the probe read every entry).
      const descOnly = await explain(desc, { where: { age: { $lt: 50 } }, order: [['address.city', 'DESC']], limit: 5 }, indexed);
      expect(descOnly).toContain(indexName(desc, descKey('address.city')));
      expect(descOnly).not.toContain('data_source_entries_order');
      // The ascending index alone, walked backward: each group of equal ages is sorted (the tie-breakers).
      expect(await explain(desc, page, ['age'])).toContain('USE TEMP B-TREE FOR LAST 2 TERMS OF ORDER BY');
    } else {
      const walkedPg = await explain(desc, page, indexed, SEEK, true);
      expect(walkedPg).toContain(indexName(desc, descKey('age')));
      expect(walkedPg).not.toContain('Incremental Sort');
    }
    // Automatic: an order DESC on a path counts toward its descending index (limits.autoIndexAfter: 5 here).
    const auto = await createWithRows('AutoDesc');
    const before = await query(auto, { where: { 'address.city': 'Lima' }, order: [['age', 'DESC']], limit: 6 });
    for (let i = 0; i < 5; i++) await query(auto, { order: [['age', 'DESC']], limit: 3 });
    await waitForAutoIndex(auto, descKey('age'));
    expect(await db.all('SELECT path, origin FROM data_source_indexes WHERE data_source_id = ?', [auto])).toEqual([{ path: descKey('age'), origin: 'auto' }]);
    expect(await query(auto, { where: { 'address.city': 'Lima' }, order: [['age', 'DESC']], limit: 6 })).toEqual(before);
    // Dropped when the definition leaves it out; the ascending one stays.
    expect((await b.api('PUT', `/v1/data-sources/${desc}`, { json: { definition: { indexes: ['age'] } } })).status).toBe(200);
    expect(await indexNames()).toContain(indexName(desc, 'age'));
    expect(await indexNames()).not.toContain(indexName(desc, descKey('age')));
  });

  it('deleting a data source drops an index of it that is on the table but not listed (a build that raced the delete)', async () => {
    const gone = await createWithRows('Gone');
    const kept = await createWithRows('Kept', { indexes: ['age'] });
    // What an automatic build leaves when it lists its index after the delete dropped the listed ones.
    const stray = indexName(gone, 'late.path');
    await db.run(`CREATE INDEX ${stray} ON data_source_entries (id) WHERE data_source_id = ${gone}`);
    expect(await indexNames()).toContain(stray);
    expect((await b.api('DELETE', `/v1/data-sources/${gone}`)).status).toBe(200);
    expect(await indexNames()).not.toContain(stray);
    expect(await indexNames()).toContain(indexName(kept, 'age'));
  });

  it('refuses bad declared indexes with a 400', async () => {
    const created = await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Bad' } });
    const id = created.body.dataSource.id as number;
    for (const indexes of [
      'age',
      ['tags.0'],
      ['a..b'],
      ['constructor'],
      [42],
      [['age', 'DOWN']],
      [['age']],
      [['tags.0', 'DESC']],
      Array.from({ length: 17 }, (_, i) => `c${i}`),
    ]) {
      const res = await b.api('PUT', `/v1/data-sources/${id}`, { json: { definition: { indexes } } });
      expect({ indexes, status: res.status, code: res.body.error?.code }).toEqual({ indexes, status: 400, code: 'INVALID_FIELD' });
      expect(typeof res.body.error.message).toBe('string');
    }
    expect((await indexNames()).filter((name) => name.startsWith(`iar_dsi_${id}_`))).toEqual([]);
  });

  it('builds an automatic index after enough queries on a path, at most autoIndexesPerDataSource', async () => {
    const id = await createWithRows('Auto');
    const before = await query(id, { where: { 'address.city': 'Kyiv' }, order: [['age', 'DESC']], limit: 8 });
    for (let i = 0; i < 6; i++) await query(id, { where: { 'address.city': 'Kyiv' }, limit: 3 });
    await waitForAutoIndex(id, 'address.city');
    expect(await indexNames()).toContain(indexName(id, 'address.city'));
    expect(await db.all('SELECT path, origin FROM data_source_indexes WHERE data_source_id = ?', [id])).toEqual([{ path: 'address.city', origin: 'auto' }]);
    // Same answer with the index; the bound (1 automatic index) keeps `name` and `age` unindexed.
    expect(await query(id, { where: { 'address.city': 'Kyiv' }, order: [['age', 'DESC']], limit: 8 })).toEqual(before);
    for (let i = 0; i < 8; i++) await query(id, { where: { name: `P${i}` } });
    await new Promise((r) => setTimeout(r, 300));
    expect((await indexNames()).filter((name) => name.startsWith(`iar_dsi_${id}_`))).toEqual([indexName(id, 'address.city')]);
    // Declaring it adopts the automatic index (it then no longer counts against the bound).
    expect((await b.api('PUT', `/v1/data-sources/${id}`, { json: { definition: { indexes: ['address.city'] } } })).status).toBe(200);
    expect(await db.all('SELECT path, origin FROM data_source_indexes WHERE data_source_id = ?', [id])).toEqual([{ path: 'address.city', origin: 'declared' }]);
  });

  if (testEngine === 'sqlite') {
    it('a counting $group over every entry counts toward its index by the entries it read (limits.autoIndexScanRows)', async () => {
      // 400 entries at 100 per query: each count by `address.city` weighs 4, so two build the index (5 needed);
      // a group the index would not serve alone (an $avg beside the count) weighs 1, as a select does.
      const counted = await createWithRows('GroupCounted');
      const averaged = await createWithRows('GroupAveraged');
      const byCity = { aggregate: [{ $group: { _id: '$data.address.city', n: { $sum: 1 } } }, { $sort: { _id: 1 } }] };
      const withAvg = { aggregate: [{ $group: { _id: '$data.address.city', n: { $sum: 1 }, age: { $avg: '$data.age' } } }] };
      for (let i = 0; i < 2; i++) await query(averaged, withAvg);
      const scanned = await query(counted, byCity);
      expect(scanned.entries).toEqual([...CITIES].sort().map((city) => ({ _id: city, n: 100 })));
      await query(counted, byCity);
      await waitForAutoIndex(counted, 'address.city');
      expect(await db.all('SELECT path, origin FROM data_source_indexes WHERE data_source_id = ?', [counted])).toEqual([
        { path: 'address.city', origin: 'auto' },
      ]);
      expect(await db.all('SELECT path FROM data_source_indexes WHERE data_source_id = ?', [averaged])).toEqual([]);
      // The same answer, now read from the index alone.
      expect(await query(counted, byCity)).toEqual(scanned);
    });

    it("closing the server drops a $group's pending count: nothing touches the closed database", async () => {
      const own = await startTestBackend({ limits: { autoIndexAfter: 5, autoIndexScanRows: 100 } });
      const warn = vi.spyOn(console, 'warn');
      try {
        const created = await own.api('POST', `/v1/data-sources?appId=${own.server.bootstrap.appId}`, { json: { name: 'Closing' } });
        const id = created.body.dataSource.id as number;
        expect((await own.api('POST', `/v1/data-sources/${id}/data`, { json: { entries: Array.from({ length: 400 }, (_, i) => row(i)) } })).status).toBe(200);
        const grouped = await own.api('POST', `/v1/data-sources/${id}/data/query`, {
          json: { aggregate: [{ $group: { _id: '$data.address.city', n: { $sum: 1 } } }] },
        });
        expect(grouped.status).toBe(200);
        // The count starts 100 ms after the answer; the server closes before it.
        await own.close();
        await new Promise((resolve) => setTimeout(resolve, 400));
        expect(warn.mock.calls.map((c) => String(c[0])).filter((m) => m.includes('automatic index'))).toEqual([]);
      } finally {
        warn.mockRestore();
        await own.close();
      }
    });
  }
});
