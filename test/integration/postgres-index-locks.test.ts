import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * data_source_entries holds the entries of every data source of every tenant. Dropping one data source's index
 * (its definition no longer declares it, or the data source is deleted) must not stall the others: a plain DROP
 * INDEX asks for an ACCESS EXCLUSIVE lock on the shared table, waits behind any transaction that read it, and
 * every later read and write of every tenant queues behind that request. Here a transaction holds a read lock on
 * the table while one data source's index is dropped; another data source's select and insert must answer before
 * that transaction ends (docs/sql.md, "Indexes").
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dropping an index on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let b: TestBackend;
  let blocker: pg.Client;
  let admin: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase('iar_idxlock');
    b = await startTestBackend({ databaseUrl: database.url });
    blocker = new pg.Client({ connectionString: database.url });
    admin = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    await admin.connect();
  });
  afterAll(async () => {
    await blocker?.end().catch(() => undefined);
    await admin?.end().catch(() => undefined);
    await b?.close();
    await database?.drop();
  });

  const create = async (name: string, definition?: object) =>
    (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name, ...(definition ? { definition } : {}) } })).body.dataSource
      .id as number;
  const indexCount = async () =>
    Number((await admin.query(`SELECT count(*) AS n FROM pg_indexes WHERE tablename = 'data_source_entries' AND indexname LIKE 'iar_dsi_%'`)).rows[0].n);

  it("leaves other data sources' reads and writes answering while it waits for a reader", async () => {
    const indexed = await create('Indexed');
    expect((await b.api('PUT', `/v1/data-sources/${indexed}`, { json: { definition: { indexes: ['age'] } } })).status).toBe(200);
    const other = await create('Other');
    for (const ds of [indexed, other])
      expect([200, 201]).toContain((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries: [{ age: 1 }, { age: 2 }] } })).status);
    expect(await indexCount()).toBe(1);

    // A transaction of another client that has read the shared table and not ended.
    await blocker.query('BEGIN');
    await blocker.query('SELECT count(*) FROM data_source_entries');
    const dropped = b.api('PUT', `/v1/data-sources/${indexed}`, { json: { definition: { indexes: [] } } });
    // The DROP is under way and waits for that transaction.
    const deadline = Date.now() + 30_000;
    const waiting = async () =>
      Number((await admin.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE 'DROP INDEX%' AND wait_event_type = 'Lock'`)).rows[0].n) > 0;
    while (!(await waiting()) && Date.now() < deadline) await sleep(20);
    expect(await waiting()).toBe(true);

    // Another data source answers meanwhile (a plain DROP INDEX would hold both until the transaction ends).
    const others = Promise.all([
      b.api('POST', `/v1/data-sources/${other}/data/query`, { json: { where: { age: 2 } } }),
      b.api('PUT', `/v1/data-sources/${other}/data`, { json: { age: 3 } }),
    ]);
    const first = await Promise.race([others.then(() => 'answered'), sleep(20_000).then(() => 'blocked')]);
    await blocker.query('COMMIT');
    expect(first).toBe('answered');
    const [query, insert] = await others;
    expect(query.status).toBe(200);
    expect(query.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ age: 2 }]);
    expect(insert.status).toBe(201);
    expect((await dropped).status).toBe(200);
    expect(await indexCount()).toBe(0);
  }, 120_000);
});
