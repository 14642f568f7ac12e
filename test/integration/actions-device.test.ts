// @vitest-environment node
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually, rejection } from '../helpers/wait.js';

const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend();
  appId = b.server.bootstrap.appId;
});
afterAll(() => b.close());

/**
 * These clients keep retrying log uploads in the background after their test (and after the backend closed);
 * their warnings would reach the console after the test file ended, which vitest reports as an error.
 */
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe('device runs', () => {
  it('client and any actions run on the device, log to IndexedDB, upload, and getLogs merges them with server records', async () => {
    const device = await b.client.App.Actions.create({ name: 'on-device', environment: 'client', functions: [fn('return', { value: 'device {{ x }}' })] });
    const either = await b.client.App.Actions.create({ name: 'either', environment: 'any', functions: [fn('return', { value: 'any' })] });
    const server = await b.client.App.Actions.create({ name: 'on-server', functions: [fn('return', { value: 'server' })] });
    for (const a of [device, either, server]) await b.client.App.Actions.publish(a.id, true);

    expect(await b.client.App.Actions.runWithResult('on-device', { x: 1 })).toBe('device 1');
    expect(await b.client.App.Actions.runWithResult('either')).toBe('any');
    expect(await b.client.App.Actions.runWithResult('on-server')).toBe('server');

    // The backend ran only the server action; the device records arrive by upload.
    const uploaded = await eventually(async () => {
      const raw = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: {} });
      return raw.body.count === 3 && raw.body;
    });
    const bySource = Object.fromEntries(uploaded.logs.map((l: { data: { actionId: number; source: string } }) => [l.data.actionId, l.data.source]));
    expect(bySource).toEqual({ [device.id]: 'device', [either.id]: 'device', [server.id]: 'server' });
    const merged = await b.client.App.Actions.getLogs();
    expect(merged.count).toBe(3);
    expect(merged.logs.map((l) => l.data.result)).toEqual(['server', 'any', 'device 1']);
    const deviceLog = merged.logs.find((l) => l.data.actionId === device.id)!;
    expect(deviceLog).toMatchObject({ type: 'app.action.completed', id: expect.any(Number), deviceKey: expect.any(String) });
    expect(deviceLog.data).toMatchObject({ mode: 'on-demand', source: 'device', actionId: device.id });
  });

  it('keeps device logs while the upload fails and shows them in getLogs; uploads later exactly once', async () => {
    let offline = true;
    const flaky = createClient({
      logger: quiet,
      baseUrl: b.url,
      appId,
      authToken: b.server.bootstrap.apiToken,
      fetch: async (input, init) => {
        const request = input instanceof Request ? input : new Request(input, init);
        if (offline && request.method === 'POST' && request.url.endsWith('/tasks/logs')) {
          const body = await request.clone().text();
          if (body.includes('"logs"')) throw new TypeError('network down');
        }
        return fetch(request);
      },
    });
    const action = await flaky.App.Actions.create({ name: 'flaky-device', environment: 'client', functions: [fn('return', { value: 7 })] });
    await flaky.App.Actions.publish(action.id, true);
    expect(await flaky.App.Actions.runWithResult('flaky-device')).toBe(7);
    const pending = await flaky.App.Actions.getLogs({ id: action.id });
    expect(pending.count).toBe(1);
    expect(pending.logs[0]).toMatchObject({ id: null, data: { result: 7, source: 'device' } });
    const serverSide = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { id: action.id } });
    expect(serverSide.body.count).toBe(0);
    offline = false;
    const after = await flaky.App.Actions.getLogs({ id: action.id });
    expect(after.count).toBe(1);
    expect(after.logs[0]!.id).toEqual(expect.any(Number));
    const again = await flaky.App.Actions.getLogs({ id: action.id });
    expect(again.count).toBe(1);
  });

  it('a burst of device runs shares one log upload, and every record arrives once', async () => {
    const uploads: number[] = [];
    // An app of its own: clients of one app share the device's store, and any of them may upload its logs.
    const tenant = await b.server.createOrganization('burst');
    const counting = createClient({
      logger: quiet,
      baseUrl: b.url,
      appId: tenant.appId,
      authToken: tenant.apiToken,
      fetch: async (input, init) => {
        const request = input instanceof Request ? input : new Request(input, init);
        if (request.method === 'POST' && request.url.endsWith('/tasks/logs')) {
          const body = (await request.clone().json()) as { logs?: unknown[] };
          if (body.logs) uploads.push(body.logs.length);
        }
        return fetch(request);
      },
    });
    const action = await counting.App.Actions.create({ name: 'burst-device', environment: 'client', functions: [fn('return', { value: '{{ n }}' })] });
    await counting.App.Actions.publish(action.id, true);
    const results = await Promise.all(Array.from({ length: 8 }, (_, n) => counting.App.Actions.runWithResult('burst-device', { n })));
    expect(results.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const uploaded = await eventually(async () => {
      const raw = await b.api('POST', `/v1/apps/${tenant.appId}/tasks/logs`, { json: { id: action.id }, token: tenant.apiToken });
      return raw.body.count === 8 && raw.body;
    });
    expect(uploaded.logs.map((l: { data: { result: number } }) => l.data.result).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(uploads.reduce((a, n) => a + n, 0)).toBe(8);
    expect(uploads.length).toBeLessThanOrEqual(2);
  });

  it('a pending log of an action removed since it ran is dropped and does not hold back the logs after it', async () => {
    const tenant = await b.server.createOrganization('removed-action');
    let offline = true;
    const uploads: number[] = [];
    const { lines, logger } = (() => {
      const lines: string[] = [];
      const log = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
      return { lines, logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } };
    })();
    const device = createClient({
      baseUrl: b.url,
      appId: tenant.appId,
      authToken: tenant.apiToken,
      logger,
      fetch: async (input, init) => {
        const request = input instanceof Request ? input : new Request(input, init);
        if (request.method === 'POST' && request.url.endsWith('/tasks/logs')) {
          const body = (await request.clone().json()) as { logs?: unknown[] };
          if (body.logs) {
            if (offline) throw new TypeError('network down');
            uploads.push(body.logs.length);
          }
        }
        return fetch(request);
      },
    });
    const doomed = await device.App.Actions.create({ name: 'doomed', environment: 'client', functions: [fn('return', { value: 'doomed' })] });
    const kept = await device.App.Actions.create({ name: 'kept', environment: 'client', functions: [fn('return', { value: 'kept' })] });
    for (const a of [doomed, kept]) await device.App.Actions.publish(a.id, true);
    expect(await device.App.Actions.runWithResult('doomed')).toBe('doomed');
    expect(await device.App.Actions.runWithResult('kept')).toBe('kept');
    expect(await device.App.Actions.runWithResult('kept')).toBe('kept');
    expect((await device.App.Actions.getLogs()).logs.map((l) => [l.id, l.data.result])).toEqual([
      [null, 'kept'],
      [null, 'kept'],
      [null, 'doomed'],
    ]);
    await device.App.Actions.remove(doomed.id);
    offline = false;
    // The upload of the three is refused (422 ACTION_NOT_FOUND): the records are sent one by one and the
    // refused one is dropped; the two others are uploaded.
    const after = await device.App.Actions.getLogs();
    expect(after.logs.map((l) => [typeof l.id, l.data.result])).toEqual([
      ['number', 'kept'],
      ['number', 'kept'],
    ]);
    const server = await b.api('POST', `/v1/apps/${tenant.appId}/tasks/logs`, { json: { id: kept.id }, token: tenant.apiToken });
    expect(server.body.count).toBe(2);
    expect(lines.filter((l) => l.startsWith('error:'))).toEqual([
      expect.stringMatching(new RegExp(`Device run log of action ${doomed.id} .*refused .*for good, dropping it`)),
    ]);
    // Later runs upload as usual, in one request.
    uploads.length = 0;
    expect(await device.App.Actions.runWithResult('kept')).toBe('kept');
    await eventually(
      async () => (await b.api('POST', `/v1/apps/${tenant.appId}/tasks/logs`, { json: { id: kept.id }, token: tenant.apiToken })).body.count === 3,
    );
    expect(uploads).toEqual([1]);
  });

  it('uploads are idempotent by deviceKey and validated', async () => {
    const action = await b.client.App.Actions.create({ name: 'upload-target', environment: 'client' });
    const record = {
      deviceKey: 'dev-abcdef123',
      type: 'app.action.completed',
      createdAt: '2025-01-01T00:00:00.000Z',
      data: { mode: 'on-demand', duration: 5, actionId: action.id, result: 1 },
    };
    const first = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { logs: [record] } });
    const second = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { logs: [record] } });
    expect(first.status).toBe(201);
    expect(second.body.ids).toEqual(first.body.ids);
    expect(second.body.created).toBe(0);
    const bad = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { logs: [{ ...record, deviceKey: 'dev-xyz98765', type: 'app.nope' }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('logs[0].type');
    // A negative duration is refused; one past a day (1e300 would break readers' dates) is stored as a day.
    const negative = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, {
      json: { logs: [{ ...record, deviceKey: 'dev-neg98765', data: { ...record.data, duration: -1 } }] },
    });
    expect([negative.status, negative.body.error?.message]).toEqual([400, expect.stringContaining('logs[0].data.duration')]);
    const long = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, {
      json: { logs: [{ ...record, deviceKey: 'dev-long9876', data: { ...record.data, duration: 1e300 } }] },
    });
    expect(long.status).toBe(201);
    const run = await b.api('GET', `/v1/apps/${appId}/tasks/runs/dev-long9876`);
    expect(run.body.run).toMatchObject({ durationMs: 86_400_000, finishedAt: new Date(Date.parse(record.createdAt) + 86_400_000).toISOString() });
    const unknown = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, {
      json: { logs: [{ ...record, deviceKey: 'dev-xyz98765', data: { ...record.data, actionId: 99999 } }] },
    });
    expect(unknown.status).toBe(422);
  });

  it('limits manual device runs per minute with RATE_LIMITED and retryAt', async () => {
    let now = Date.parse('2025-02-01T08:00:00Z');
    const limited = createClient({
      logger: quiet,
      baseUrl: b.url,
      appId,
      authToken: b.server.bootstrap.apiToken,
      clock: () => now,
      limits: { runsPerMinute: 2 },
    });
    const action = await limited.App.Actions.create({ name: 'device-limited', environment: 'client', functions: [fn('return', { value: 1 })] });
    await limited.App.Actions.publish(action.id, true);
    await limited.App.Actions.runWithResult('device-limited');
    now += 10_000;
    await limited.App.Actions.run('device-limited');
    const error = await rejection(limited.App.Actions.runWithResult('device-limited'));
    expect(error.code).toBe('RATE_LIMITED');
    expect(error.details.retryAt).toBe('2025-02-01T08:01:00.000Z');
    now = Date.parse('2025-02-01T08:01:00.001Z');
    expect(await limited.App.Actions.runWithResult('device-limited')).toBe(1);
  });

  it('a device screen-targeted action calls the handler this screen registered', async () => {
    const page = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name: 'Here', script: '' } });
    const pageId = page.body.page.id;
    const screen = createClient({ logger: quiet, baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, pageId, environment: 'viewer' });
    await screen.App.Actions.create({ name: 'local-screen', environment: 'client', pageId });
    const missing = await rejection(screen.App.Actions.runWithResult('local-screen'));
    expect(missing.code).toBe('SCREEN_NOT_LOADED');
    screen.Page.onRemoteExecution((payload) => ({ doubled: (payload.n as number) * 2 }));
    expect(await screen.App.Actions.runWithResult('local-screen', { n: 4 })).toEqual({ doubled: 8 });
  });
});
