import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, KeptRows, KeptText } from '../../src/server/db/database.js';
import { openPostgres } from '../../src/server/db/postgres.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { testEngine } from '../helpers/server.js';
import { createTestDatabase } from '../helpers/postgres.js';

/**
 * `Transaction.keep` (src/server/db/database.ts): the rows of a query as the transaction saw them, read in pages
 * after it, whatever is written meanwhile (docs/data-sources.md, "Streamed answers"). On the engine of the run
 * (`IAR_TEST_DB=postgres`: a pool of 2 connections, so a kept result that did not give its connection back shows).
 */
describe(`kept rows (${testEngine})`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let db: Database;
  beforeAll(async () => {
    if (testEngine === 'postgres') {
      database = await createTestDatabase();
      db = openPostgres({ url: database.url, max: 2 });
    } else db = openSqlite({ memory: true });
    await db.run('CREATE TABLE rows_kept (id INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER NOT NULL, label TEXT NOT NULL)');
    for (let n = 0; n < 25; n++) await db.run('INSERT INTO rows_kept (n, label) VALUES (?, ?)', [n % 5, `r${n}`]);
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  const expected = async () =>
    (await db.all<{ id: number; n: number; label: string }>('SELECT id, n, label FROM rows_kept ORDER BY n, id DESC')).map((r) => [r.id, r.n, r.label]);

  it('reads, page by page and in the query order, the rows as the transaction left them', async () => {
    const before = await expected();
    const kept = await db.transaction(async (tx) => {
      await tx.run('INSERT INTO rows_kept (n, label) VALUES (?, ?)', [2, 'in the transaction']);
      return tx.keep<[number, number, string]>('SELECT id, n, label FROM rows_kept WHERE n >= ? ORDER BY n, id DESC', [0]);
    });
    const snapshot = await expected();
    expect(snapshot).toHaveLength(before.length + 1);
    // Written after: not in the kept rows.
    await db.run('DELETE FROM rows_kept WHERE n = ?', [1]);
    await db.run('INSERT INTO rows_kept (n, label) VALUES (?, ?)', [0, 'after']);
    const pages: unknown[][][] = [];
    for (;;) {
      const page = await kept.next(4);
      if (page.length) pages.push(page);
      if (page.length < 4) break;
    }
    expect(pages.map((p) => p.length)).toEqual([4, 4, 4, 4, 4, 4, 2]);
    expect(pages.flat()).toEqual(snapshot);
    expect(await kept.next(4)).toEqual([]);
    await kept.close();
  });

  it('keeps the texts of a query, read after the transaction as pages of texts joined by commas', async () => {
    const texts = async () =>
      (await db.all<{ n: number; label: string }>('SELECT n, label FROM rows_kept ORDER BY n, id DESC')).map((r) => `${r.label}:${r.n}`);
    const kept = await db.transaction(async (tx) => {
      await tx.run('INSERT INTO rows_kept (n, label) VALUES (?, ?)', [3, 'é, "quoted" 😀']);
      return tx.keepText({ columns: 'n, label', from: 'FROM rows_kept WHERE n >= ? ORDER BY n, id DESC', text: "label || ':' || n", params: [0] });
    });
    const snapshot = await texts();
    await db.run('DELETE FROM rows_kept WHERE n = ?', [2]);
    const pages: string[] = [];
    for (let page = await kept.next(4); page; page = await kept.next(4)) pages.push(Buffer.from(page).toString('utf8'));
    expect(pages).toHaveLength(Math.ceil(snapshot.length / 4));
    expect(pages.slice(1).every((p) => p.startsWith(','))).toBe(true);
    expect(pages.join('')).toBe(snapshot.join(','));
    expect(await kept.next(4)).toBeUndefined();
    await kept.close();
    // Closed before the end, and of a transaction that rolled back.
    const early = await db.transaction((tx) => tx.keepText({ columns: 'label', from: 'FROM rows_kept ORDER BY id', text: 'label' }));
    expect(Buffer.from((await early.next(1))!).toString()).toBe((await db.get<{ label: string }>('SELECT label FROM rows_kept ORDER BY id LIMIT 1'))!.label);
    await early.close();
    expect(await early.next(1)).toBeUndefined();
    let lost: KeptText | undefined;
    await expect(
      db.transaction(async (tx) => {
        lost = await tx.keepText({ columns: 'label', from: 'FROM rows_kept ORDER BY id', text: 'label' });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await expect(lost!.next(1)).rejects.toThrow();
    await lost!.close();
  });

  it('frees what it keeps when closed before the end, and keeps nothing of a transaction that rolled back', async () => {
    for (let k = 0; k < 5; k++) {
      const kept = await db.transaction((tx) => tx.keep<[number]>('SELECT id FROM rows_kept ORDER BY id'));
      expect(await kept.next(2)).toHaveLength(2);
      await kept.close();
      await kept.close();
      expect(await kept.next(2)).toEqual([]);
    }
    let lost: KeptRows<[number]> | undefined;
    await expect(
      db.transaction(async (tx) => {
        lost = await tx.keep<[number]>('SELECT id FROM rows_kept ORDER BY id');
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await expect(lost!.next(2)).rejects.toThrow();
    await lost!.close();
    // Every connection is back: two transactions at once still run (PostgreSQL pool of 2).
    const both = await Promise.all([0, 1].map(() => db.transaction(async (tx) => (await tx.get<{ c: number }>('SELECT COUNT(*) AS c FROM rows_kept'))!.c)));
    expect(both[0]).toBe(both[1]);
  });
});
