import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../../src/server/db/database.js';
import { createAutoIndexes } from '../../src/server/data-sources/auto-indexes.js';
import { createEntryCache } from '../../src/server/data-sources/cache.js';
import { createIndexGate, indexedPaths } from '../../src/server/data-sources/indexes.js';
import { findCandidates } from '../../src/server/data-sources/sql/candidates.js';
import { impliedWhere } from '../../src/server/data-sources/sql/where.js';
import type { ServerContext } from '../../src/server/context.js';
import type { Core } from '../../src/server/data-sources/core.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { compileJoins } from '../../src/server/data-sources/query/joins.js';
import { compileOrder, sortEntries } from '../../src/server/data-sources/query/order.js';
import { startBudget } from '../../src/server/data-sources/query/filter-entries.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import { joinedEntries } from '../../src/server/data-sources/scan-joined.js';
import { SCAN_PAGE, scanSelect } from '../../src/server/data-sources/scan-select.js';
import { entryData, queryBody, seededRandom } from '../helpers/query-generator.js';
import { testEngine, type TestBackend } from '../helpers/server.js';
import { startSqlBackend } from '../helpers/sql-backend.js';

/**
 * scan-select.ts (issue 14, "no whole data source is held in memory"): a select left to the JS evaluator on a data
 * source larger than the entry cache is matched page by page, keeping only what the page can hold. Differential:
 * generated selects (orders, offsets, limits, counts, attributes; `$regex`, `$filters` and the rest) on a data
 * source of 2.5 pages, each answered by the scan and by runQuery over every entry; also with a rule that hides a
 * column, and while another request writes.
 */
const N = Math.round(SCAN_PAGE * 2.5);
const QUERIES = testEngine === 'postgres' ? 120 : 250;
const noJoins = { load: async () => [] as EntryRecord[] };
/** Joins of the generated selects, to a data source (id 999) that `joined` serves from every 7th entry. */
const JOINS = [
  { J: { dataSourceId: 999, on: { 'data.n': 'data.n' }, count: true } },
  { J: { dataSourceId: 999, on: { 'data.b': 'data.b' }, required: true, limit: 2, attributes: ['data.n'] } },
  { J: { dataSourceId: 999, where: { n: { $gt: 3 } }, order: ['n', 'DESC'], limit: 5 } },
  { J: { dataSourceId: 999, on: { 'data.s': 'data.s' }, required: true, has: true }, K: { dataSourceId: 999, limit: 3 } },
];

describe(`selects scanned in pages (${testEngine})`, () => {
  let b: TestBackend;
  let db: Database;
  let dsId: number;
  let entries: EntryRecord[];
  let core: Core;
  const cleanup: (() => unknown)[] = [];

  const readAll = async () =>
    (
      await db.all<{ id: number; data: string; sort_order: number; created_at: string; updated_at: string }>(
        'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id',
        [dsId],
      )
    ).map((r) => ({ id: r.id, dataSourceId: dsId, data: JSON.parse(r.data), order: r.sort_order, createdAt: r.created_at, updatedAt: r.updated_at }));

  beforeAll(async () => {
    ({ b, db } = await startSqlBackend('iar_scan', cleanup, { limits: { entryCacheEntries: 0 } }));
    const ds = await b.client.DataSources.create({ name: 'Scanned' });
    dsId = ds.id;
    const rng = seededRandom(7);
    const conn = await b.client.DataSources.connect(ds.id);
    await conn.import(Array.from({ length: N }, () => entryData(rng)));
    entries = await readAll();
    expect(entries).toHaveLength(N);
    // The scan's own parts, as the server builds them: its database, limits and an entry cache that holds nothing.
    const ctx = { db, limits: { aggregateTimeoutMs: 60_000, autoIndexAfter: 0, joinEntries: 100_000, distinctRows: 100_000 } };
    core = {
      ctx,
      cache: createEntryCache({ maxEntries: 0 }),
      autoIndexes: createAutoIndexes(ctx as unknown as ServerContext, createIndexGate()),
    } as unknown as Core;
  });

  afterAll(async () => {
    await db?.close();
    await b?.close();
    for (const fn of cleanup.reverse()) await fn();
  });

  const joined = { load: async () => entries.filter((e) => e.id % 7 === 0).map((e) => ({ ...e, dataSourceId: 999 })) };

  it(`answers ${QUERIES} generated selects as runQuery does over every entry`, async () => {
    const rng = seededRandom(11);
    const bounds = { maxId: Math.max(...entries.map((e) => e.id)), times: [entries[0]!.createdAt] };
    let nonEmpty = 0;
    for (let i = 0; i < QUERIES; i++) {
      const body = queryBody(rng, bounds);
      if (i % 4 === 1) body.where = { ...(body.where as object), s: { $regex: 'a|é', $options: 'i' } };
      // Filters that translate (sql/filters.ts) beside a `$regex`: the candidates are picked with them.
      if (i % 8 === 1)
        body.where = {
          ...(body.where as object),
          $filters: [
            { column: 's', condition: 'notcontains', value: 'zz' },
            { column: 'tags', condition: 'notempty' },
          ],
        };
      if (i % 4 === 2) body.where = { ...(body.where as object), $filters: [{ column: 'n', condition: '>', value: '2' }] };
      if (i % 5 === 0) body.attributes = ['id', 'data.n', 'tags'];
      // Rows that repeat: distinct keeps the first of each in the query's order.
      if (i % 6 === 3) Object.assign(body, { distinct: true, attributes: i % 12 === 3 ? ['data.n'] : ['tags', 'data.b'] });
      // An aggregate over the (page of) matches: `$regex` or `$filters` keep it from SQL.
      else if (i % 7 === 5) {
        delete body.attributes;
        delete body.includePagination;
        body.aggregate = [{ $group: { _id: '$data.b', c: { $sum: 1 }, t: { $sum: '$data.n' }, first: { $first: '$id' } } }, { $sort: { _id: 1 } }];
      }
      // Joins (another data source, read whole by both paths): a count by key, a required join, entries appended.
      if ((i % 8 === 6 || (i % 6 === 3 && i % 4 !== 3)) && !body.aggregate) body.join = JOINS[(i >> 3) % JOINS.length];
      const got = await scanSelect(core, dsId, {}, compileQuery(body), joined);
      const want = await runQuery(entries, compileQuery(body).body, joined);
      if (want.entries.length > 0) nonEmpty++;
      expect({ i, body, got }).toEqual({ i, body, got: want });
    }
    expect(nonEmpty).toBeGreaterThan(QUERIES * 0.3);
  }, 300_000);

  it('answers selects with joins as runQuery does: required joins, counts, appended entries, pages and totals', async () => {
    let compared = 0;
    let paged = 0;
    for (const join of JOINS)
      for (const where of [{ s: { $regex: '.' } }, { n: { $regex: '^[0-9]' } }, { $filters: [{ column: 'n', condition: '>', value: '2' }] }])
        for (const window of [
          {},
          { limit: 20, offset: 10, includePagination: true },
          { limit: 5, order: [['n', 'DESC']], includePagination: true },
          // Distinct rows compared with their join values (`attributes` leave few columns: rows repeat).
          { distinct: true, attributes: ['data.b'], limit: 30, offset: 2, includePagination: true },
        ]) {
          const body = { where, join, attributes: ['id', 'data.n', 'data.b'], ...window };
          const got = await scanSelect(core, dsId, {}, compileQuery(body), joined);
          const want = await runQuery(entries, compileQuery(body).body, joined);
          expect({ body, got }).toEqual({ body, got: want });
          compared++;
          if (((want as { pagination?: { total: number } }).pagination?.total ?? 0) > SCAN_PAGE + 100) paged++;
        }
    expect(compared).toBe(JOINS.length * 12);
    // The parents kept by the scan were cut to the page's reach, so the totals counted the rest.
    expect(paged).toBeGreaterThan(0);
  }, 120_000);

  it('reads only the candidates of a large joined data source, over HTTP, and answers as runQuery does', async () => {
    // A second data source larger than the entry cache (0): the join's `where` picks its candidates in SQL.
    const other = await b.client.DataSources.create({ name: 'JoinedLarge' });
    const rng = seededRandom(31);
    await (await b.client.DataSources.connect(other.id)).import(Array.from({ length: SCAN_PAGE + 300 }, () => entryData(rng)));
    const joinedAll = (
      await db.all<{ id: number; data: string; sort_order: number; created_at: string; updated_at: string }>(
        'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id',
        [other.id],
      )
    ).map((r) => ({ id: r.id, dataSourceId: other.id, data: JSON.parse(r.data), order: r.sort_order, createdAt: r.created_at, updatedAt: r.updated_at }));
    const everyEntry = { load: async () => joinedAll };
    const wheres = [
      { n: { $gte: 2 }, s: { $regex: 'a' } },
      { 'data.b': true, $filters: [{ column: 'n', condition: '>', value: '1' }] },
      { $or: [{ n: 1 }, { k: { $lt: 3 } }], tags: { $size: 1 } },
      { s: { $regex: '^[a-c]' } },
      // Translated filters (sql/filters.ts) pick the candidates; the `$regex` beside them is the JS evaluator's.
      {
        $filters: [
          { column: 's', condition: 'contains', value: 'a' },
          { column: 'tags', condition: 'empty' },
        ],
        n: { $regex: '.' },
      },
    ];
    let picked = 0;
    for (const where of wheres)
      for (const join of [
        { J: { dataSourceId: other.id, on: { 'data.n': 'data.n' }, where, count: true } },
        { J: { dataSourceId: other.id, on: { 'data.b': 'data.b' }, where, required: true, limit: 2, attributes: ['data.n'] } },
        { J: { dataSourceId: other.id, where, order: [['n', 'DESC']], limit: 5 } },
      ]) {
        const body = { where: { n: { $regex: '^[0-9]' } }, join, attributes: ['id', 'data.n', 'data.b'], limit: 15, offset: 3, includePagination: true };
        const res = await b.api('POST', `/v1/data-sources/${dsId}/data/query`, { json: body });
        expect(res.status).toBe(200);
        const want = JSON.parse(JSON.stringify(await runQuery(entries, compileQuery(body).body, everyEntry)));
        expect({ body, got: res.body }).toEqual({ body, got: want });
        // The loader's read: exactly the matches of the join's where (every entry a candidate when no part of it
        // translates), the part that translates picking the candidates in SQL.
        const [compiled] = compileJoins(join);
        const cond = impliedWhere(compiled!.whereSource);
        const read = await joinedEntries(
          core,
          other.id,
          {},
          { source: compiled!.whereSource, test: compiled!.where, field: 'join.J.where' },
          cond,
          startBudget(),
        );
        expect(read).toEqual(joinedAll.filter(compiled!.where));
        if (cond) picked++;
      }
    // Four of the five wheres have a part the database tests.
    expect(picked).toBe(12);
    // A join without a where reads the data source in pages too, and keeps every entry.
    const [all] = compileJoins({ J: { dataSourceId: other.id } });
    const every = { source: undefined, test: all!.where, field: 'join.J.where' };
    expect(await joinedEntries(core, other.id, {}, every, null, startBudget())).toEqual(joinedAll);
    // One that appends its best 5 keeps only the best of each batch (2,300 entries: pruned once), whatever the cap.
    const order = compileOrder([['n', 'DESC']], 'order');
    const tight = { ...core, ctx: { ...core.ctx, limits: { ...core.ctx.limits, joinEntries: 100 } } } as Core;
    const best = await joinedEntries(tight, other.id, {}, { ...every, best: { order, count: 5 } }, null, startBudget());
    expect(best!.length).toBeLessThan(joinedAll.length);
    expect(sortEntries(best!, order, 5)).toEqual(sortEntries(joinedAll, order, 5));
    await expect(joinedEntries(tight, other.id, {}, every, null, startBudget())).rejects.toMatchObject({ code: 'JOIN_TOO_LARGE' });

    // A write before every page read: each paged pass starts over; the last pass reads inside one transaction and
    // answers for the state it sees (nothing read whole, the bound still applies).
    let reads = 0;
    const writing = beforeBoundedReads(db, async () => {
      reads++;
      await db.run('UPDATE data_sources SET data_version = data_version + 1 WHERE id = ?', [other.id]);
    });
    const busy = { ...core, ctx: { ...core.ctx, db: writing } } as Core;
    expect(await joinedEntries(busy, other.id, {}, every, null, startBudget(60_000))).toEqual(joinedAll);
    expect(reads).toBe(3 * 2);
    const busyTight = { ...busy, ctx: { ...busy.ctx, limits: tight.ctx.limits } } as Core;
    await expect(joinedEntries(busyTight, other.id, {}, every, null, startBudget(60_000))).rejects.toMatchObject({ code: 'JOIN_TOO_LARGE' });
  }, 120_000);

  it('shows the matching only the columns a rule leaves visible', async () => {
    const grant = { exclude: ['s'] };
    const body = {
      where: { s: { $exists: false }, n: { $regex: '.' } },
      order: [['n', 'DESC']] as [string, 'DESC'][],
      limit: 30,
      offset: 5,
      includePagination: true,
    };
    const got = await scanSelect(core, dsId, grant, compileQuery(body));
    const hidden = entries.map((e) => ({ ...e, data: Object.fromEntries(Object.entries(e.data).filter(([k]) => k !== 's')) }));
    expect(got).toEqual(await runQuery(hidden, compileQuery(body).body, noJoins));
    // Hidden, `s` is missing from every entry: more of them match than when it shows.
    const shown = await scanSelect(core, dsId, {}, compileQuery(body));
    expect(got!.pagination!.total).toBeGreaterThan(shown!.pagination!.total);
  });

  it('picks the candidates through expression indexes, rank 3 entries included, and answers as runQuery does', async () => {
    // Declared indexes (docs/sql.md "Indexes"): the PUT answers once they are built.
    const put = await b.api('PUT', `/v1/data-sources/${dsId}`, { json: { definition: { indexes: ['n', 's', 'k', 'b'] } } });
    expect(put.status).toBe(200);
    const indexed = await indexedPaths(db, dsId);
    expect([...indexed].sort()).toEqual(['b', 'k', 'n', 's']);
    const rng = seededRandom(23);
    const bounds = { maxId: Math.max(...entries.map((e) => e.id)), times: [entries[0]!.createdAt] };
    let throughIndex = 0;
    for (let i = 0; i < QUERIES / 2; i++) {
      const body = queryBody(rng, bounds);
      body.where =
        i % 2 === 0
          ? { ...(body.where as object), s: { $regex: 'a|é', $options: 'i' } }
          : { ...(body.where as object), $filters: [{ column: 'n', condition: '>', value: '2' }] };
      const cond = impliedWhere(body.where);
      if (cond && (await findCandidates(db, db.dialect, dsId, cond, indexed)).ids) throughIndex++;
      const got = await scanSelect(core, dsId, {}, compileQuery(body), joined);
      const want = await runQuery(entries, compileQuery(body).body, joined);
      expect({ i, body, got }).toEqual({ i, body, got: want });
    }
    expect(throughIndex).toBeGreaterThan(QUERIES / 20);
  }, 300_000);

  it('finds the candidates again when a write came during a scan (found by review)', async () => {
    const ds = (await b.client.DataSources.create({ name: 'Stale' })).id;
    await (await b.client.DataSources.connect(ds)).import(Array.from({ length: 50 }, (_, i) => ({ n: i % 5, s: `v${i}` })));
    expect((await b.api('PUT', `/v1/data-sources/${ds}`, { json: { definition: { indexes: ['n'] } } })).status).toBe(200);
    // The real database; its second bounded read (the first page, after the candidates' ids) comes after a write
    // that adds a match: the scan starts over, and its candidates must include the new entry.
    let reads = 0;
    const interleaved = beforeBoundedReads(db, async () => {
      reads++;
      if (reads === 2) expect((await b.api('PUT', `/v1/data-sources/${ds}/data`, { json: { n: 1, s: 'new' } })).status).toBe(201);
    });
    const ctx = { db: interleaved, limits: { aggregateTimeoutMs: 60_000, autoIndexAfter: 0 } };
    const scanning = {
      ctx,
      cache: createEntryCache({ maxEntries: 0 }),
      autoIndexes: createAutoIndexes(ctx as unknown as ServerContext, createIndexGate()),
    } as unknown as Core;
    const body = { where: { n: 1, s: { $regex: '.' } }, includePagination: true };
    const got = await scanSelect(scanning, ds, {}, compileQuery(body));
    const rows = await db.all<{ id: number; data: string; sort_order: number; created_at: string; updated_at: string }>(
      'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id',
      [ds],
    );
    const now = rows.map((r) => ({
      id: Number(r.id),
      dataSourceId: ds,
      data: JSON.parse(r.data),
      order: r.sort_order,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }));
    expect(reads).toBeGreaterThanOrEqual(3);
    expect(got).toEqual(await runQuery(now, compileQuery(body).body, noJoins));
    expect(got?.pagination?.total).toBe(11);
  });

  it('answers for one state of the data set while another request writes', async () => {
    const body = { where: { s: { $regex: '.' } }, includePagination: true, limit: 10 };
    const before = await runQuery(entries, compileQuery(body).body, noJoins);
    const scanning = scanSelect(core, dsId, {}, compileQuery(body));
    const writes = (async () => {
      for (let i = 0; i < 5; i++) {
        const put = () => b.api('PUT', `/v1/data-sources/${dsId}/data`, { json: { s: `written ${i}` } });
        // A keep-alive socket left idle by the tests above may have been closed by the server: sent again once.
        expect((await put().catch(put)).status).toBe(201);
      }
    })();
    const [got] = await Promise.all([scanning, writes]);
    const states = [before];
    const all = await readAll();
    for (let k = 1; k <= 5; k++) states.push(await runQuery(all.slice(0, N + k), compileQuery(body).body, noJoins));
    if (got !== null) expect(states).toContainEqual(got); // null: written throughout, the caller reads the set at once
    entries = all;
  });
});

/** The real database, running `before` ahead of each of its bounded reads (the scans' page and candidate reads). */
function beforeBoundedReads(db: Database, before: () => Promise<void>): Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'bounded')
        return async (ms: number, fn: (q: Queryable) => Promise<unknown>) => {
          await before();
          return target.bounded(ms, fn);
        };
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
