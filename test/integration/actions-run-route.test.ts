import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Issue 18 item 1, the server side of run handles: `GET v1/apps/:appId/tasks/runs/:runId` reads one run of the
 * app (status, timings, result or error, trace, log id) and `getLogs({ runId })` its log record. Another app's or
 * organization's run is 404 like a missing one; a client token reads a run only with the key it was queued with.
 */
const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

let b: TestBackend;
let appId: number;
let other: Bootstrap;
let sibling: { appId: number; apiToken: string };

beforeAll(async () => {
  b = await startTestBackend({ limits: { runTimeoutMs: 3000, runsPerMinute: 1000 } });
  appId = b.server.bootstrap.appId;
  other = await b.server.createOrganization('Other');
  // A second app of the same organization, with its own API token.
  const app = await b.api('POST', `/v1/organizations/${b.server.bootstrap.organizationId}/apps`, {
    token: b.server.bootstrap.studioToken,
    json: { name: 'Sibling' },
  });
  const token = await b.api('POST', `/v1/apps/${app.body.app.id}/tokens`, { token: b.server.bootstrap.studioToken, json: { name: 'sib', kind: 'api' } });
  sibling = { appId: app.body.app.id, apiToken: token.body.token.token };
  for (const [name, functions] of [
    ['double', [fn('set', { n2: '{{ n * 2 }}' }), fn('return', { value: '{{ n2 }}' })]],
    ['kaput', [fn('set', { a: 1 }), fn('script', { code: 'console.log("private value"); throw new Error("kaput")' })]],
  ] as const) {
    const action = await b.client.App.Actions.create({ name, functions: [...functions] });
    await b.client.App.Actions.publish(action.id, true);
  }
});
afterAll(() => b.close());

const queue = async (name: string, payload: Record<string, unknown>, key?: string) => {
  const r = await b.api('POST', `/v1/apps/${appId}/tasks/${name}/run`, { json: { payload }, headers: key ? { 'Idempotency-Key': key } : {} });
  expect(r.status).toBe(202);
  return r.body.runId as number;
};
const finished = (runId: number, init: { token?: string; headers?: Record<string, string> } = {}) =>
  eventually(async () => {
    const r = await b.api('GET', `/v1/apps/${appId}/tasks/runs/${runId}`, init);
    return r.status === 200 && ['completed', 'failed'].includes(r.body.run.status) && r.body.run;
  });

describe('GET tasks/runs/:runId', () => {
  it('answers a completed run with its result, timings, trace and log id', async () => {
    const runId = await queue('double', { n: 21 });
    const run = await finished(runId);
    expect(run).toMatchObject({ runId, actionName: 'double', source: 'server', status: 'completed', result: 42, attempts: 1, logId: expect.any(Number) });
    expect(run.error).toBeUndefined();
    expect(Date.parse(run.queuedAt)).toBeLessThanOrEqual(Date.parse(run.startedAt));
    expect(Date.parse(run.startedAt)).toBeLessThanOrEqual(Date.parse(run.finishedAt));
    expect(run.durationMs).toBeGreaterThanOrEqual(0);
    expect(run.trace.map((t: { path: string }) => t.path)).toEqual(['functions[0]', 'functions[1]']);
    // The same log record getLogs gives for the run.
    for (const logs of [
      await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { runId } }),
      await b.api('GET', `/v1/apps/${appId}/tasks/logs?runId=${runId}`),
    ]) {
      expect(logs.body.count).toBe(1);
      expect(logs.body.logs[0]).toMatchObject({ id: run.logId, data: { runId, result: 42 } });
    }
  });

  it('answers a failed run with its error code and trace', async () => {
    const run = await finished(await queue('kaput', {}));
    expect(run).toMatchObject({ status: 'failed', actionName: 'kaput', error: { code: expect.any(String), errorMessage: expect.stringContaining('kaput') } });
    expect(run.result).toBeUndefined();
    expect(run.trace.some((t: { path: string; outcome: string }) => t.path === 'functions[1]' && t.outcome === 'failed')).toBe(true);
  });

  it('getLogs by the id of a run not logged yet, or of no run, finds nothing', async () => {
    expect((await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { runId: 999_999 } })).body).toEqual({ count: 0, logs: [] });
    expect((await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { runId: 'dev-unknown-run' } })).body).toEqual({ count: 0, logs: [] });
  });

  it('GET tasks/runs finds the run queued with the Idempotency-Key header, for every kind of token', async () => {
    const key = `by-key-${Math.random().toString(36).slice(2)}`;
    const runId = await queue('double', { n: 4 }, key);
    await finished(runId);
    for (const token of [b.clientToken, b.server.bootstrap.apiToken]) {
      const r = await b.api('GET', `/v1/apps/${appId}/tasks/runs`, { token, headers: { 'Idempotency-Key': key } });
      expect(r.status).toBe(200);
      expect(r.body.run).toMatchObject({ runId, status: 'completed', result: 8 });
    }
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/runs`, { headers: { 'Idempotency-Key': 'no-such-key' } })).body.error.code).toBe('RUN_NOT_FOUND');
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/runs`)).status).toBe(400);
    // Another app's key is not this app's run.
    const sib = await b.api('GET', `/v1/apps/${sibling.appId}/tasks/runs`, { token: sibling.apiToken, headers: { 'Idempotency-Key': key } });
    expect(sib.status).toBe(404);
  });

  it('answers a run still queued as queued, without timings of its end', async () => {
    // The run route's wait: false answer comes before any worker takes it; the row is read at once.
    const runId = await queue('double', { n: 1 });
    const r = await b.api('GET', `/v1/apps/${appId}/tasks/runs/${runId}`);
    expect(r.status).toBe(200);
    expect(['queued', 'running', 'completed']).toContain(r.body.run.status);
    if (r.body.run.status !== 'completed') expect(r.body.run).toMatchObject({ finishedAt: null, durationMs: null, logId: null, trace: [] });
    await finished(runId);
  });

  it('is 404 RUN_NOT_FOUND for a missing run and for a run of another app or organization', async () => {
    const runId = await queue('double', { n: 2 });
    await finished(runId);
    const missing = await b.api('GET', `/v1/apps/${appId}/tasks/runs/999999`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('RUN_NOT_FOUND');
    // The sibling app of the organization, with its own token and path: not its run.
    const sib = await b.api('GET', `/v1/apps/${sibling.appId}/tasks/runs/${runId}`, { token: sibling.apiToken });
    expect(sib.status).toBe(404);
    expect(sib.body.error.code).toBe('RUN_NOT_FOUND');
    // The studio token of the organization on the sibling's path: still not there.
    expect((await b.api('GET', `/v1/apps/${sibling.appId}/tasks/runs/${runId}`, { token: b.server.bootstrap.studioToken })).status).toBe(404);
    // Another organization: its token on this app's path is an unknown app; on its own path, an unknown run.
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/runs/${runId}`, { token: other.apiToken })).body.error.code).toBe('APP_NOT_FOUND');
    const foreign = await b.api('GET', `/v1/apps/${other.appId}/tasks/runs/${runId}`, { token: other.apiToken });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('RUN_NOT_FOUND');
    // Nor does getLogs of those apps find its record.
    const logs = await b.api('POST', `/v1/apps/${other.appId}/tasks/logs`, { token: other.apiToken, json: { runId } });
    expect(logs.body).toEqual({ count: 0, logs: [] });
  });

  it('is 400 for a bad id, in the path and in getLogs', async () => {
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999', 'dev-', 'queued:x']) {
      const r = await b.api('GET', `/v1/apps/${appId}/tasks/runs/${encodeURIComponent(bad)}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.error.code, bad).toBe('INVALID_PARAMETER');
    }
    for (const bad of ['abc', 0, -1, 1.5, true, {}, 'dev-']) {
      const r = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { runId: bad } });
      expect(r.status, String(bad)).toBe(400);
      expect(r.body.error.code).toBe('INVALID_FIELD');
    }
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/logs?runId=abc`)).status).toBe(400);
  });

  it('a client token reads a server run only with the Idempotency-Key it was queued with', async () => {
    const key = `key-${Math.random().toString(36).slice(2)}`;
    const runId = await queue('double', { n: 5 }, key);
    const run = await finished(runId, { token: b.clientToken, headers: { 'Idempotency-Key': key } });
    expect(run).toMatchObject({ runId, status: 'completed', result: 10 });
    for (const headers of [{}, { 'Idempotency-Key': 'another-key' }] as Record<string, string>[]) {
      const r = await b.api('GET', `/v1/apps/${appId}/tasks/runs/${runId}`, { token: b.clientToken, headers });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('RUN_NOT_FOUND');
    }
    // API tokens need no key.
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/runs/${runId}`)).body.run.result).toBe(10);
  });

  it("a client token never reads the backend's own runs, and no caller may use their keys", async () => {
    // Log-triggered and scheduled runs get keys a visitor could work out (log:<type>:<logId>:<actionId>, schedule:…).
    for (const key of ['schedule:1:2026-01-01T00:00:00.000Z', 'log:dataSource.entry.create:1:1']) {
      const r = await b.api('POST', `/v1/apps/${appId}/tasks/double/run`, {
        token: b.clientToken,
        json: { payload: { n: 1 } },
        headers: { 'Idempotency-Key': key },
      });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('INVALID_HEADER');
    }
    const orders = await b.client.DataSources.create({ name: 'run-route-orders' });
    const onInsert = await b.client.App.Actions.create({
      name: 'run-route-on-order',
      triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: orders.id } }],
      functions: [fn('return', { value: '{{ log.id }}' })],
    });
    await b.client.App.Actions.publish(onInsert.id, true);
    await (await b.client.DataSources.connect(orders.id)).insert({ item: 'tea' });
    const log = await eventually(async () => {
      const r = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { id: onInsert.id } });
      return r.body.count > 0 && r.body.logs[0];
    });
    const runId = log.data.runId as number;
    // The key the log trigger gave the run: an API token finds the run by it.
    const key = `log:dataSource.entry.create:${log.data.result}:${onInsert.id}`;
    const byKeyApi = await b.api('GET', `/v1/apps/${appId}/tasks/runs`, { headers: { 'Idempotency-Key': key } });
    expect(byKeyApi.body.run).toMatchObject({ runId, status: 'completed' });
    for (const r of [
      await b.api('GET', `/v1/apps/${appId}/tasks/runs/${runId}`, { token: b.clientToken, headers: { 'Idempotency-Key': key } }),
      await b.api('GET', `/v1/apps/${appId}/tasks/runs`, { token: b.clientToken, headers: { 'Idempotency-Key': key } }),
    ]) {
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('RUN_NOT_FOUND');
    }
  });

  it("a client token sees a server run's trace without the nodes' inputs and outputs", async () => {
    // The run reads with the app's access; a page gets what the action returns, not the values in between.
    const key = `key-${Math.random().toString(36).slice(2)}`;
    const runId = await queue('double', { n: 7 }, key);
    const asClient = await finished(runId, { token: b.clientToken, headers: { 'Idempotency-Key': key } });
    const asApi = await finished(runId);
    expect(asApi.trace[0]).toMatchObject({ path: 'functions[0]', input: { n2: 14 } });
    expect(asClient.trace.map((t: { path: string }) => t.path)).toEqual(asApi.trace.map((t: { path: string }) => t.path));
    expect(asClient.trace.some((t: Record<string, unknown>) => 'input' in t || 'output' in t)).toBe(false);
    const byKey = await b.api('GET', `/v1/apps/${appId}/tasks/runs`, { token: b.clientToken, headers: { 'Idempotency-Key': key } });
    expect(byKey.body.run.trace.some((t: Record<string, unknown>) => 'input' in t || 'output' in t)).toBe(false);
    // A failed run with wait: the 422 answer's trace, too.
    const failed = await b.api('POST', `/v1/apps/${appId}/tasks/kaput/run`, { token: b.clientToken, json: { payload: {}, wait: true } });
    expect(failed.status).toBe(422);
    expect(failed.body.error.trace.length).toBeGreaterThan(0);
    expect(failed.body.error.trace.some((t: Record<string, unknown>) => 'input' in t || 'output' in t)).toBe(false);
    const failedApi = await b.api('POST', `/v1/apps/${appId}/tasks/kaput/run`, { json: { payload: {}, wait: true } });
    expect(failedApi.body.error.trace[0]).toMatchObject({ input: { a: 1 } });
    // Log lines are values in between too: the API token sees them, the client token does not.
    expect(JSON.stringify(failedApi.body.error.trace)).toContain('private value');
    expect(JSON.stringify(failed.body.error.trace)).not.toContain('private value');
  });

  it("a device upload of several actions' records: one 422 for an action the app lacks, else each action's latest run", async () => {
    const actions = await b.client.App.Actions.get();
    const ids = ['double', 'kaput'].map((name) => actions.find((a) => a.name === name)!.id);
    const foreign = await b.api('POST', `/v1/apps/${sibling.appId}/tasks`, { token: sibling.apiToken, json: { name: 'theirs', functions: [] } });
    const record = (actionId: number, secondsAgo: number) => ({
      deviceKey: `dev-${crypto.randomUUID()}`,
      type: 'app.action.completed',
      createdAt: new Date(Date.parse('2031-01-01T00:00:00Z') - secondsAgo * 1000).toISOString(),
      data: { mode: 'on-demand', duration: 1, actionId, result: secondsAgo },
    });
    // The sibling app's action, named by the fourth record: refused whole, naming that record; nothing stored.
    const mixed = [record(ids[0]!, 5), record(ids[1]!, 4), record(ids[0]!, 3), record(foreign.body.action.id, 2), record(ids[1]!, 1)];
    const refused = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { token: b.clientToken, json: { logs: mixed } });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'ACTION_NOT_FOUND', message: expect.stringContaining('logs[3].data.actionId') });
    expect((await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { runId: mixed[0]!.deviceKey } })).body.count).toBe(0);
    // Without it, out of order: every record stored, each action's last run its latest record.
    const logs = [record(ids[0]!, 30), record(ids[1]!, 10), record(ids[0]!, 20), record(ids[1]!, 40)];
    const upload = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { token: b.clientToken, json: { logs } });
    expect(upload.body).toMatchObject({ created: 4 });
    const after = await b.client.App.Actions.get();
    expect(ids.map((id) => after.find((a) => a.id === id)!.lastRunAt)).toEqual([logs[2]!.createdAt, logs[1]!.createdAt]);
    // An action id past what a number holds exactly: 400, the same on both databases.
    for (const actionId of [2 ** 63, 1e21, 0, -1]) {
      const bad = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { token: b.clientToken, json: { logs: [record(actionId, 1)] } });
      expect([actionId, bad.status, bad.body.error?.code]).toEqual([actionId, 400, 'INVALID_FIELD']);
    }
    // Sent again (a lost answer): the same ids, nothing created.
    expect((await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { token: b.clientToken, json: { logs } })).body).toEqual({ ids: upload.body.ids, created: 0 });
  });

  it('answers a device run from the record the device uploaded; getLogs finds it by its run id', async () => {
    const [action] = (await b.client.App.Actions.get()).filter((a) => a.name === 'double');
    const deviceKey = `dev-${crypto.randomUUID()}`;
    const createdAt = new Date(Date.now() - 1000).toISOString();
    const upload = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, {
      token: b.clientToken,
      json: {
        logs: [
          {
            deviceKey,
            type: 'app.task.failed',
            createdAt,
            data: {
              mode: 'on-demand',
              duration: 12,
              actionId: action!.id,
              result: {
                errorType: 'TypeError',
                errorMessage: 'nope',
                code: 'FUNCTION_FAILED',
                trace: [{ path: 'functions[0]', package: 'p', durationMs: 1, outcome: 'failed' }],
              },
            },
          },
        ],
      },
    });
    expect(upload.status).toBe(201);
    const r = await b.api('GET', `/v1/apps/${appId}/tasks/runs/${deviceKey}`, { token: b.clientToken });
    expect(r.status).toBe(200);
    expect(r.body.run).toMatchObject({
      runId: deviceKey,
      source: 'device',
      status: 'failed',
      actionId: action!.id,
      actionName: 'double',
      queuedAt: createdAt,
      startedAt: createdAt,
      finishedAt: new Date(Date.parse(createdAt) + 12).toISOString(),
      durationMs: 12,
      error: { code: 'FUNCTION_FAILED', errorType: 'TypeError', errorMessage: 'nope' },
      logId: upload.body.ids[0],
    });
    expect(r.body.run.trace).toHaveLength(1);
    const logs = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { runId: deviceKey } });
    expect(logs.body.logs.map((l: { deviceKey: string }) => l.deviceKey)).toEqual([deviceKey]);
    // Another app does not see it.
    expect((await b.api('GET', `/v1/apps/${sibling.appId}/tasks/runs/${deviceKey}`, { token: sibling.apiToken })).status).toBe(404);
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/runs/dev-${crypto.randomUUID()}`)).body.error.code).toBe('RUN_NOT_FOUND');
  });
});
