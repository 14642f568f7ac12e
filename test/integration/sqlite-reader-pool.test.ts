import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite, type SqliteDatabase } from '../../src/server/db/sqlite.js';
import { startSqliteReaders, type SqliteReaders } from '../../src/server/db/sqlite-readers/pool.js';
import { isStatementTimeout, SQLITE_BUDGET_FUNCTION } from '../../src/server/db/statement-budget.js';
import { eventually, rejection } from '../helpers/wait.js';

/**
 * The SQLite reader threads (src/server/db/sqlite-readers/): Database.bounded reads of a database file run on
 * worker threads with their own read-only connections, each read in one snapshot. SQLite whatever IAR_TEST_DB
 * says (the adapter's own behaviour). The statements are real: a recursive count of `n` rows that calls the
 * budget function on each row stops at the budget; without the call, only when it ends.
 */
const slowCount = (n: number, checked = true) =>
  `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}${checked ? ` AND ${SQLITE_BUDGET_FUNCTION}(x)` : ''}) SELECT count(*) AS n FROM c`;

describe('SQLite reader threads', () => {
  let dir: string;
  let db: SqliteDatabase;
  const extra: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'iar-readers-'));
    db = openSqlite({ file: join(dir, 'test.sqlite') });
    await db.run('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)');
    await db.run("INSERT INTO items (name) VALUES ('a'), ('b')");
    await db.startReaders(2);
  });

  afterEach(async () => {
    for (const pool of extra.splice(0)) await pool.close();
  });

  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const count = (q: { get: SqliteDatabase['get'] }) => q.get<{ n: number }>('SELECT count(*) AS n FROM items').then((r) => r!.n);

  it('starts the threads it was asked for, and reads what the main connection committed before', async () => {
    expect(db.readerThreads()).toHaveLength(2);
    for (let i = 0; i < 20; i++) {
      await db.run('INSERT INTO items (name) VALUES (?)', [`w${i}`]);
      expect(await db.bounded(5000, count)).toBe(await count(db));
    }
    await db.transaction(async (tx) => {
      await tx.run("UPDATE items SET name = 'renamed' WHERE id = 1");
    });
    expect(await db.bounded(5000, (q) => q.get<{ name: string }>('SELECT name FROM items WHERE id = 1'))).toEqual({ name: 'renamed' });
  });

  it("runs a read's statements in one snapshot: a write committed meanwhile shows in the next read", async () => {
    const before = await count(db);
    const [first, second] = await db.bounded(5000, async (q) => {
      const a = await count(q);
      await db.run("INSERT INTO items (name) VALUES ('meanwhile')");
      return [a, await count(q)];
    });
    expect([first, second]).toEqual([before, before]);
    expect(await db.bounded(5000, count)).toBe(before + 1);
  });

  it('answers a read while another one runs a slow statement on the other thread', async () => {
    const done: string[] = [];
    const slow = db
      .bounded(1500, (q) => q.get(slowCount(1e12)))
      .then(
        () => done.push('slow answered'),
        (error) => done.push(isStatementTimeout(error) ? 'slow timed out' : `slow failed: ${error}`),
      );
    // The slow statement holds a reader thread, not this one: this loop runs while it does.
    await eventually(async () => db.readerThreads().some((t) => t.busy));
    const n = await db.bounded(5000, count);
    done.push('plain answered');
    await slow;
    expect(n).toBeGreaterThan(0);
    expect(done).toEqual(['plain answered', 'slow timed out']);
  });

  it('stops a statement past its budget with StatementTimeout and keeps the thread', async () => {
    const threads = db.readerThreads().map((t) => t.threadId);
    for (let i = 0; i < 3; i++) {
      const error = await rejection(db.bounded(100, (q) => q.get(slowCount(1e12))));
      expect(isStatementTimeout(error)).toBe(true);
      expect(error.timeoutMs).toBe(100);
    }
    await eventually(async () => db.readerThreads().every((t) => !t.busy));
    expect(db.readerThreads().map((t) => t.threadId)).toEqual(threads);
    expect(await db.bounded(5000, count)).toBeGreaterThan(0);
  });

  it("passes SQLite's errors on, refuses writes, and stays usable", async () => {
    const missing = await rejection(db.bounded(5000, (q) => q.all('SELECT * FROM no_such_table')));
    expect(missing.message).toMatch(/no such table/);
    expect(missing.code).toBe('SQLITE_ERROR');
    const write = await rejection(db.bounded(5000, (q) => q.run("INSERT INTO items (name) VALUES ('x')")));
    expect(write.code).toBe('SQLITE_READONLY');
    const rows = await db.bounded(5000, (q) => q.all<{ v: Uint8Array; big: number }>("SELECT x'0102' AS v, 9007199254740991 AS big"));
    expect([...rows[0]!.v]).toEqual([1, 2]);
    expect(rows[0]!.big).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('defines on the reader connections every SQL function the main connection has', async () => {
    const ours = 'SELECT name, narg FROM pragma_function_list WHERE builtin = 0 ORDER BY name, narg';
    const main = await db.all(ours);
    expect(main).toContainEqual({ name: SQLITE_BUDGET_FUNCTION, narg: expect.any(Number) });
    expect(await db.bounded(5000, (q) => q.all(ours))).toEqual(main);
  });

  it('queues reads past the number of threads, each answered', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => db.bounded(5000, count)));
    expect(new Set(answers).size).toBe(1);
  });

  it('replaces a thread that does not answer within its grace after the deadline', async () => {
    const pool: SqliteReaders = await startSqliteReaders({ file: join(dir, 'test.sqlite'), size: 1, graceMs: 50 });
    extra.push(pool);
    const [before] = pool.threads().map((t) => t.threadId);
    // No budget call in the statement: only its end (or the thread's termination) stops it.
    const error = await rejection(pool.bounded(50, (q) => q.get(slowCount(3e6, false))));
    expect(isStatementTimeout(error)).toBe(true);
    await eventually(async () => pool.threads().length === 1 && pool.threads()[0]!.threadId !== before, 60_000);
    expect(await pool.bounded(5000, count)).toBeGreaterThan(0);
  }, 90_000);

  it('close() stops every thread; a read after it fails', async () => {
    const file = join(dir, 'test.sqlite');
    const other = openSqlite({ file });
    await other.startReaders(2);
    expect(other.readerThreads()).toHaveLength(2);
    expect(await other.bounded(5000, count)).toBeGreaterThan(0);
    await other.close();
    expect(other.readerThreads()).toEqual([]);
    await expect(other.bounded(5000, count)).rejects.toThrow();
    const memory = openSqlite({ memory: true });
    await memory.startReaders(2);
    expect(memory.readerThreads()).toEqual([]);
    await memory.close();
  });
});
