import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { openPostgres } from '../../src/server/db/postgres.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { budgetSalt, isStatementTimeout, sqliteBudgetCheck } from '../../src/server/db/statement-budget.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { testEngine } from '../helpers/server.js';

/**
 * `Database.bounded` (src/server/db/database.ts, docs/data-sources.md "Time budgets") on the engine of the run:
 * a statement that would never end is stopped, and the connection is usable afterwards (PostgreSQL: a pool of one
 * connection, so one that did not come back, or came back inside its aborted transaction or with the budget
 * still set, shows). SQLite stops only statements that carry the check term (sqliteBudgetCheck).
 */
const check = testEngine === 'postgres' ? '' : ` WHERE ${sqliteBudgetCheck('x')}`;
const params = () => (testEngine === 'postgres' ? [] : [budgetSalt()]);
const endless = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) AS n FROM c${check}`;
const counted = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT COUNT(*) AS n FROM c${check}`;

describe(`Database.bounded (${testEngine})`, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let db: Database;
  beforeAll(async () => {
    if (testEngine === 'postgres') {
      database = await createTestDatabase();
      db = openPostgres({ url: database.url, max: 1 });
    } else db = openSqlite({ memory: true });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => null,
      (error: unknown) => error,
    );

  it('stops a statement that would never end; the connection then answers as before', async () => {
    for (let i = 0; i < 3; i++) {
      const error = await failure(db.bounded(100, (q) => q.get(endless, params())));
      expect(isStatementTimeout(error)).toBe(true);
      expect(Number((await db.get<{ n: number }>(counted, params()))?.n)).toBe(100_000);
    }
    // PostgreSQL: the budget was local to the read's transaction.
    if (testEngine === 'postgres') expect((await db.get<{ v: string }>("SELECT current_setting('statement_timeout') AS v"))?.v).toBe('0');
  });

  it('answers reads within the budget as plain statements do', async () => {
    const rows = await db.bounded(60_000, async (q) => [await q.get<{ n: number }>(counted, params()), await q.get<{ n: number }>(counted, params())]);
    expect(rows.map((row) => Number(row?.n))).toEqual([100_000, 100_000]);
  });

  it('refuses a statement started after the budget is spent', async () => {
    const error = await failure(
      db.bounded(20, async (q) => {
        await new Promise((resolve) => setTimeout(resolve, 60));
        return q.get(counted, params());
      }),
    );
    expect(isStatementTimeout(error)).toBe(true);
    expect(Number((await db.get<{ n: number }>(counted, params()))?.n)).toBe(100_000);
  });
});
