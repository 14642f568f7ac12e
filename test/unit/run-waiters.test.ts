/**
 * Waiters of server runs (`wait: true`, src/server/actions/runs.ts): a run that ends without this instance's
 * `notify` (run by another instance, the waiter's poll finds it) or a wait that times out leaves nothing behind,
 * so a long-lived instance does not grow by one entry per waited run. Real SQLite in memory, real migrations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunWaiters } from '../../src/server/actions/runs.js';
import { insertRun, type NewRun } from '../../src/server/actions/run-store.js';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openSqlite, type SqliteDatabase } from '../../src/server/db/sqlite.js';

let db: SqliteDatabase;
beforeAll(async () => {
  db = openSqlite({ memory: true });
  await migrate(db, migrations);
});
afterAll(() => db?.close());

const queued = () =>
  insertRun(db, {
    appId: 1,
    organizationId: 1,
    actionId: 1,
    mode: 'on-demand',
    trigger: 'manual',
    environment: 'live',
    // Not read by the waiters.
    definition: {} as NewRun['definition'],
    payload: {},
    context: {},
    queuedAt: new Date().toISOString(),
  });

describe('run waiters', () => {
  it('a wait that times out on a run still queued leaves no entry', async () => {
    const waiters = createRunWaiters();
    const runId = await queued();
    expect((await waiters.wait({ db }, runId, 30))?.status).toBe('queued');
    expect(waiters.waiting()).toBe(0);
  });

  it('a run finished elsewhere (no notify here) is found by the poll and leaves no entry', async () => {
    const waiters = createRunWaiters();
    const runId = await queued();
    const waiting = waiters.wait({ db }, runId, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(waiters.waiting()).toBe(1);
    await db.run("UPDATE action_runs SET status = 'succeeded', finished_at = ? WHERE id = ?", [new Date().toISOString(), runId]);
    expect((await waiting)?.status).toBe('succeeded');
    expect(waiters.waiting()).toBe(0);
  });
});
