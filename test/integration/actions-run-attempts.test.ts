import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/server/db/open.js';
import type { ServerOptions } from '../../src/server/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * A run whose backend keeps dying during it (a crash, a kill) comes back to the queue when its lease expires; past
 * `limits.runAttempts` claims it is failed with RUN_ABANDONED instead of being run again (issue 15). A database that
 * outlives its backends (an SQLite file, or a PostgreSQL database): the test plays the earlier crashes by editing the
 * run's row between two backends.
 */
const dir = mkdtempSync(join(tmpdir(), 'iar-attempts-'));
const database = testEngine === 'postgres' ? await createTestDatabase() : undefined;
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await database?.drop();
});
const storage: ServerOptions = database ? { databaseUrl: database.url } : { dataDir: dir };

describe('run attempts', () => {
  it('a run claimed more than runAttempts times fails with RUN_ABANDONED, logged once', async () => {
    const limits = { runTimeoutMs: 60_000, runLeaseMs: 500, runAttempts: 3 };
    let b: TestBackend = await startTestBackend({ ...storage, limits });
    const action = await b.client.App.Actions.create({
      name: 'spin',
      functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'while (true) {}' } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    const { runId } = (await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/tasks/spin/run`, { json: {} })).body as { runId: number };
    const { db } = await openStore({ databaseUrl: database?.url, sqlite: { file: join(dir, 'runtime.sqlite') } });
    const status = async () => (await db.get<{ status: string }>('SELECT status FROM action_runs WHERE id = ?', [runId]))?.status;
    await eventually(async () => (await status()) === 'running');
    await b.server.kill(); // crashes while running the run (its claim stays, with its lease)
    // The run was claimed (and its backend died) three times already.
    await db.run('UPDATE action_runs SET attempts = 3, lease_until = ? WHERE id = ?', [new Date(Date.now() - 1000).toISOString(), runId]);
    await db.close();

    b = await startTestBackend({ ...storage, limits });
    try {
      const logs = await eventually(async () => {
        const { logs } = await b.client.App.Actions.getLogs({ id: action.id });
        return logs.length > 0 && logs;
      }, 15_000);
      expect(logs).toHaveLength(1);
      expect(logs[0]!.data.result).toMatchObject({ code: 'RUN_ABANDONED', errorType: 'WorkerError' });
    } finally {
      await b.close();
    }
  }, 60_000);

  it('a run whose backend died during it runs again on the next backend, once, and is logged once', async () => {
    const limits = { runTimeoutMs: 60_000, runLeaseMs: 500, runAttempts: 3 };
    let b: TestBackend = await startTestBackend({ ...storage, limits });
    const action = await b.client.App.Actions.create({
      name: 'slow',
      functions: [
        { functionPackage: 'com.client.function.script', settings: { code: 'const t = Date.now(); while (Date.now() - t < 1500) {} return "done";' } },
      ],
    });
    await b.client.App.Actions.publish(action.id, true);
    const { runId } = (await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/tasks/slow/run`, { json: {} })).body as { runId: number };
    const { db } = await openStore({ databaseUrl: database?.url, sqlite: { file: join(dir, 'runtime.sqlite') } });
    try {
      const row = async () => db.get<{ status: string; attempts: number }>('SELECT status, attempts FROM action_runs WHERE id = ?', [runId]);
      await eventually(async () => (await row())?.status === 'running');
      await b.server.kill(); // dies in the middle of the run: its claim stays, with its lease
      expect(await row()).toMatchObject({ status: 'running', attempts: 1 });

      b = await startTestBackend({ ...storage, limits });
      const logs = await eventually(async () => {
        const { logs } = await b.client.App.Actions.getLogs({ id: action.id });
        return logs.length > 0 && logs;
      }, 30_000);
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatchObject({ type: 'app.action.completed', data: { result: 'done', runId } });
      expect(await row()).toMatchObject({ status: 'succeeded', attempts: 2 });
      await new Promise((r) => setTimeout(r, 500));
      expect((await b.client.App.Actions.getLogs({ id: action.id })).logs).toHaveLength(1);
    } finally {
      await db.close();
      await b.close();
    }
  }, 60_000);
});
