import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * A run whose backend keeps dying during it (a crash, a kill) comes back to the queue when its lease expires; past
 * `limits.runAttempts` claims it is failed with RUN_ABANDONED instead of being run again (issue 15). SQLite file
 * database: the test plays the earlier crashes by editing the run's row between two backends.
 */
const dir = mkdtempSync(join(tmpdir(), 'iar-attempts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('run attempts', () => {
  it('a run claimed more than runAttempts times fails with RUN_ABANDONED, logged once', async () => {
    const limits = { runTimeoutMs: 60_000, runLeaseMs: 500, runAttempts: 3 };
    let b: TestBackend = await startTestBackend({ dataDir: dir, limits });
    const action = await b.client.App.Actions.create({
      name: 'spin',
      functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'while (true) {}' } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    const { runId } = (await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/tasks/spin/run`, { json: {} })).body as { runId: number };
    const file = new Database(join(dir, 'runtime.sqlite'));
    const status = () => (file.prepare('SELECT status FROM action_runs WHERE id = ?').get(runId) as { status: string } | undefined)?.status;
    await eventually(async () => status() === 'running');
    await b.server.kill(); // crashes while running the run (its claim stays, with its lease)
    // The run was claimed (and its backend died) three times already.
    file.prepare('UPDATE action_runs SET attempts = 3, lease_until = ? WHERE id = ?').run(new Date(Date.now() - 1000).toISOString(), runId);
    file.close();

    b = await startTestBackend({ dataDir: dir, limits });
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
});
