import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimRows } from '../../src/server/db/claim.js';
import { openPostgres, type PostgresDatabase } from '../../src/server/db/postgres.js';
import { createTestDatabase } from '../helpers/postgres.js';

describe('PostgreSQL adapter', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: PostgresDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = openPostgres({ url: database.url });
    await db.run(`CREATE TABLE items (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      name TEXT NOT NULL UNIQUE,
      n INTEGER NOT NULL DEFAULT 0,
      ratio REAL,
      raw BLOB,
      status TEXT NOT NULL DEFAULT 'queued',
      claimed_by TEXT
    )`);
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  it('runs the portable SQL: placeholders, RETURNING ids, camelCase aliases, 64-bit integers as numbers, bytes', async () => {
    const row = await db.get<{ id: number }>('INSERT INTO items (name, n, ratio, raw) VALUES (?, ?, ?, ?) RETURNING id', [
      'a',
      2 ** 40,
      0.1,
      new Uint8Array([1, 2, 3]),
    ]);
    expect(row).toEqual({ id: 1 });
    const read = await db.get<Record<string, unknown>>('SELECT id, name AS itemName, n, ratio, raw, COUNT(*) OVER () AS total FROM items WHERE name = ?', [
      'a',
    ]);
    expect(read).toEqual({ id: 1, itemName: 'a', n: 2 ** 40, ratio: 0.1, raw: Buffer.from([1, 2, 3]), total: 1 });
    expect(await db.get("SELECT id FROM items WHERE name = '?' OR name = ?", ['nope'])).toBeUndefined();
    expect(await db.run('UPDATE items SET n = n + 1 WHERE name IN (?, ?)', ['a', 'b'])).toEqual({ changes: 1 });
    expect(await db.run('INSERT OR IGNORE INTO items (name) VALUES (?)', ['a'])).toEqual({ changes: 0 });
    const sum = await db.get<{ s: number; c: number }>('SELECT SUM(n) AS s, COUNT(*) AS c FROM items');
    expect(sum).toEqual({ s: 2 ** 40 + 1, c: 1 });
  });

  it('moves the identity sequence past explicitly inserted ids, as SQLite does', async () => {
    await db.run('INSERT INTO items (id, name) VALUES (?, ?)', [10, 'ten']);
    const next = await db.get<{ id: number }>('INSERT INTO items (name) VALUES (?) RETURNING id', ['eleven']);
    expect(next!.id).toBe(11);
    await db.run('DELETE FROM items WHERE id = 11');
    await db.run('INSERT INTO items (id, name) VALUES (?, ?)', [5, 'five']);
    // Never backwards: a deleted id is not handed out again (AUTOINCREMENT).
    expect((await db.get<{ id: number }>('INSERT INTO items (name) VALUES (?) RETURNING id', ['twelve']))!.id).toBe(12);
  });

  it('commits a transaction, and rolls it back entirely when it throws', async () => {
    await db.transaction(async (tx) => {
      await tx.run('INSERT INTO items (name) VALUES (?)', ['t1']);
      await tx.run('INSERT INTO items (name) VALUES (?)', ['t2']);
    });
    await expect(
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO items (name) VALUES (?)', ['t3']);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await db.all<{ name: string }>("SELECT name FROM items WHERE name LIKE 't%' ORDER BY name")).map((r) => r.name)).toEqual([
      't1',
      't2',
      'ten',
      'twelve',
    ]);
  });

  it('does not commit a transaction whose failed statement was caught', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO items (name) VALUES (?)', ['c1']);
        await tx.run('INSERT INTO items (name) VALUES (?)', ['a']).catch(() => undefined);
        return 'done';
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await db.get('SELECT id FROM items WHERE name = ?', ['c1'])).toBeUndefined();
  });

  it('serializes read-then-write transactions: concurrent increments are never lost (retried on conflicts)', async () => {
    const id = (await db.get<{ id: number }>('INSERT INTO items (name, n) VALUES (?, 0) RETURNING id', ['counter']))!.id;
    let attempts = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        db.transaction(async (tx) => {
          attempts++;
          const { n } = (await tx.get<{ n: number }>('SELECT n FROM items WHERE id = ?', [id]))!;
          await new Promise((r) => setTimeout(r, 2));
          await tx.run('UPDATE items SET n = ? WHERE id = ?', [n + 1, id]);
        }),
      ),
    );
    expect((await db.get<{ n: number }>('SELECT n FROM items WHERE id = ?', [id]))!.n).toBe(20);
    expect(attempts).toBeGreaterThan(20);
  });

  it('claims rows once across concurrent claimers (FOR UPDATE SKIP LOCKED)', async () => {
    await db.run("DELETE FROM items WHERE status = 'queued'");
    for (let i = 0; i < 200; i++) await db.run('INSERT INTO items (name) VALUES (?)', [`job${i}`]);
    const other = openPostgres({ url: database.url });
    try {
      const claimer = (who: string, pool: PostgresDatabase) => async () => {
        const got: number[] = [];
        for (;;) {
          const rows = await claimRows<{ id: number }>(pool, {
            table: 'items',
            set: "status = 'running', claimed_by = ?",
            setParams: [who],
            where: "status = 'queued'",
            limit: 3,
            returning: 'id',
          });
          if (!rows.length) return got;
          got.push(...rows.map((r) => r.id));
        }
      };
      const results = await Promise.all([claimer('a', db)(), claimer('b', db)(), claimer('c', other)(), claimer('d', other)()]);
      const all = results.flat();
      expect(all).toHaveLength(200);
      expect(new Set(all).size).toBe(200);
      expect(results.filter((r) => r.length > 0).length).toBeGreaterThan(1);
    } finally {
      await other.close();
    }
  });

  it('holds an advisory lock across connections', async () => {
    const other = openPostgres({ url: database.url });
    const order: string[] = [];
    try {
      await Promise.all([
        db.withAdvisoryLock('k', async () => {
          order.push('a+');
          await new Promise((r) => setTimeout(r, 50));
          order.push('a-');
        }),
        new Promise((r) => setTimeout(r, 10)).then(() =>
          other.withAdvisoryLock('k', async () => {
            order.push('b+');
            order.push('b-');
          }),
        ),
      ]);
      expect(order).toEqual(['a+', 'a-', 'b+', 'b-']);
    } finally {
      await other.close();
    }
  });

  it('terminate() cuts connections: an open transaction rolls back and later calls fail', async () => {
    const doomed = openPostgres({ url: database.url });
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const tx = doomed.transaction(async (t) => {
      await t.run('INSERT INTO items (name) VALUES (?)', ['doomed']);
      entered();
      await new Promise((r) => setTimeout(r, 200));
      await t.run('INSERT INTO items (name) VALUES (?)', ['doomed2']);
    });
    await inside;
    await doomed.terminate();
    await expect(tx).rejects.toBeDefined();
    await expect(doomed.get('SELECT 1 AS one')).rejects.toMatchObject({ code: 'DB_TERMINATED' });
    expect(await db.get('SELECT id FROM items WHERE name = ?', ['doomed'])).toBeUndefined();
  });
});
