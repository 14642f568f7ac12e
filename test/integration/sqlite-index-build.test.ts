import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexName } from '../../src/server/data-sources/indexes.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import type { Bootstrap } from '../../src/server/index.js';
import { tenantRequests } from '../helpers/tenant-requests.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * "No tenant can slow down another" while SQLite builds an index (docs/sql.md, "Indexes"): on a database file the
 * build runs on a thread of its own (db/sqlite-readers/ddl.ts), so the server's thread, which every request of
 * every tenant needs, keeps answering. The test process is the server's: its event loop delay is the server's.
 * On the main connection the build of 270,000 entries held that thread for all of it (about a second here, the
 * PUT's whole length); off it, the longest stall is a small part of the PUT, reads of another organization
 * answer meanwhile, and its write waits for the build and is stored.
 * A SQLite file whatever the project (vitest.config.ts runs sqlite*.test.ts once).
 */
const ROWS = 270_000;

describe('building an index on a SQLite database file', () => {
  let b: TestBackend;
  let dir: string;
  let other: Bootstrap;

  const { request, createWithEntries: create } = tenantRequests(() => b.url);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'iar-index-build-'));
    b = await startTestBackend({ dataDir: dir });
    other = await b.server.createOrganization('Other');
  }, 60_000);

  afterAll(async () => {
    await b?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("another organization's reads answer while an index is built, and its write waits and is stored", async () => {
    const big = await create(b.server.bootstrap, 'Big', [{ age: -1 }]);
    const plain = await create(other, 'Plain', [{ city: 'Oslo' }, { city: 'Lima' }]);
    // The big data set, written beside the server (WAL) as a bulk import leaves it.
    const load = new BetterSqlite3(join(dir, 'runtime.sqlite'));
    try {
      load.pragma('busy_timeout = 5000');
      load
        .prepare(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
           INSERT INTO data_source_entries (data_source_id, data, sort_order, created_at, updated_at)
           SELECT ?, json_object('age', i % 90, 'name', 'Person ' || i), i, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z' FROM n`,
        )
        .run(ROWS, big);
      load.prepare('UPDATE data_sources SET data_version = data_version + 1 WHERE id = ?').run(big);
    } finally {
      load.close();
    }

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = performance.now();
    let built = false;
    const put = request(b.server.bootstrap.apiToken, 'PUT', `/v1/data-sources/${big}`, { definition: { indexes: ['age'] } }).finally(() => {
      built = true;
    });
    let reads = 0;
    let write: ReturnType<typeof request> | undefined;
    while (!built) {
      const read = await request(other.apiToken, 'POST', `/v1/data-sources/${plain}/data/query`, { where: { city: 'Oslo' } });
      expect(read.status).toBe(200);
      expect(read.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ city: 'Oslo' }]);
      reads++;
      write ??= request(other.apiToken, 'POST', `/v1/data-sources/${plain}/data`, { entries: [{ city: 'Kyiv' }], append: true });
    }
    const answer = await put;
    const elapsed = performance.now() - started;
    delay.disable();
    expect(answer.status).toBe(200);
    const longestStallMs = delay.max / 1e6;
    expect({ longestStallMs, elapsed, reads }).toEqual({
      longestStallMs: expect.any(Number),
      elapsed: expect.any(Number),
      reads: expect.any(Number),
    });
    // Off the main thread: the longest stall is a small part of the build (on it, nearly all of it).
    expect(longestStallMs).toBeLessThan(elapsed / 2);
    expect(reads).toBeGreaterThanOrEqual(3);

    expect((await write!).status).toBe(200);
    const after = await request(other.apiToken, 'POST', `/v1/data-sources/${plain}/data/query`, { order: [['city', 'ASC']] });
    expect(after.body.entries.map((e: { data: { city: string } }) => e.data.city)).toEqual(['Kyiv', 'Lima', 'Oslo']);

    // The index is built and listed (read on a connection of the test's own), and the answers are right.
    const look = new BetterSqlite3(join(dir, 'runtime.sqlite'), { readonly: true });
    try {
      expect(look.prepare('SELECT path, origin, name FROM data_source_indexes WHERE data_source_id = ?').all(big)).toEqual([
        { path: 'age', origin: 'declared', name: indexName(big, 'age') },
      ]);
      expect(look.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND name = ?`).get(indexName(big, 'age'))).toEqual({ n: 1 });
    } finally {
      look.close();
    }
    const found = await request(b.server.bootstrap.apiToken, 'POST', `/v1/data-sources/${big}/data/query`, {
      where: { age: 42 },
      includePagination: true,
      limit: 1,
    });
    expect(found.status).toBe(200);
    expect(found.body.pagination.total).toBe(ROWS / 90);
  }, 120_000);

  it('slowDdl: reads go on beside the build, writes wait for it, a failed build answers its error', async () => {
    const db = openSqlite({ file: join(dir, 'ddl.sqlite') });
    try {
      await db.run('CREATE TABLE t (id INTEGER PRIMARY KEY, doc TEXT)');
      await db.run(
        `INSERT INTO t (doc) SELECT json_object('k', i % 97) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) SELECT i FROM n)`,
      );
      const order: string[] = [];
      const build = db.slowDdl(`CREATE INDEX t_k ON t (json_extract(doc, '$.k'))`).then(() => order.push('build'));
      // The build holds the lock from here on.
      await new Promise((resolve) => setImmediate(resolve));
      const read = db.get<{ n: number }>('SELECT count(*) AS n FROM t').then((row) => order.push(`read ${row?.n}`));
      const write = db.run(`INSERT INTO t (doc) VALUES ('{"k":1}')`).then(() => order.push('write'));
      // Read-only for better-sqlite3, but it opens a transaction: it waits too (found by review).
      const savepoint = db.run('SAVEPOINT s1').then(async () => {
        await db.run('RELEASE s1');
        order.push('savepoint');
      });
      await Promise.all([build, read, write, savepoint]);
      expect(order).toEqual(['read 200000', 'build', 'write', 'savepoint']);
      expect(await db.all(`SELECT name FROM sqlite_master WHERE type = 'index' AND name = 't_k'`)).toEqual([{ name: 't_k' }]);

      const failed = await db.slowDdl('CREATE INDEX nope ON missing_table (a)').catch((error: Error & { code?: string }) => error);
      expect(failed).toBeInstanceOf(Error);
      expect({ message: (failed as Error).message, code: (failed as { code?: string }).code }).toEqual({
        message: 'no such table: main.missing_table',
        code: 'SQLITE_ERROR',
      });
      // The lock is free again.
      expect(await db.run(`INSERT INTO t (doc) VALUES ('{"k":2}')`)).toEqual({ changes: 1 });
    } finally {
      await db.close();
    }
  }, 60_000);
});
