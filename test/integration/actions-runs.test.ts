import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually, rejection } from '../helpers/wait.js';

const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend({ limits: { runTimeoutMs: 1500, resultBytes: 20_000, runsPerMinute: 1000 } }, { limits: { runTimeoutMs: 1500 } });
  appId = b.server.bootstrap.appId;
});
afterAll(() => b.close());

async function published(definition: Parameters<TestBackend['client']['App']['Actions']['create']>[0]) {
  const action = await b.client.App.Actions.create(definition);
  await b.client.App.Actions.publish(action.id, true);
  return action;
}

describe('server runs', () => {
  it('runWithResult waits for the result; run resolves once queued; one log record each', async () => {
    const action = await published({ name: 'hello', functions: [fn('return', { value: 'Hello {{ name }}' })] });
    expect(await b.client.App.Actions.runWithResult('hello', { name: 'Ann' })).toBe('Hello Ann');
    expect(await b.client.App.Actions.run('hello', { name: 'Bob' })).toMatchObject({ runId: expect.any(Number), status: 'queued' });
    const logs = await eventually(async () => {
      const page = await b.client.App.Actions.getLogs({ id: action.id });
      return page.count === 2 && page;
    });
    expect(logs.logs.map((l) => l.data.result)).toEqual(['Hello Bob', 'Hello Ann']);
    for (const log of logs.logs) {
      expect(log.type).toBe('app.action.completed');
      expect(log.data).toMatchObject({ mode: 'on-demand', actionId: action.id, source: 'server' });
      expect(log.data.duration).toBeTypeOf('number');
      expect(log.id).toBeTypeOf('number');
    }
    const [list] = (await b.client.App.Actions.get()).filter((a) => a.id === action.id);
    expect(list!.lastRunAt).toBeTypeOf('string');
  });

  it('the raw route answers 202 with a run id, or the result with wait', async () => {
    await published({ name: 'raw', functions: [fn('return', { value: '{{ n * 2 }}' })] });
    const queued = await b.api('POST', `/v1/apps/${appId}/tasks/raw/run`, { json: { payload: { n: 2 } } });
    expect(queued.status).toBe(202);
    expect(queued.body).toMatchObject({ status: 'queued', runId: expect.any(Number) });
    const waited = await b.api('POST', `/v1/apps/${appId}/tasks/raw/run`, { json: { payload: { n: 21 }, wait: true } });
    expect(waited.status).toBe(200);
    expect(waited.body.result).toBe(42);
  });

  it('a failing run rejects with its code and trace and is logged as app.task.failed', async () => {
    const action = await published({
      name: 'boom',
      functions: [fn('set', { a: 1 }), fn('script', { code: 'throw new Error("kaput")' })],
    });
    const error = await rejection(b.client.App.Actions.runWithResult('boom'));
    expect(error.status).toBe(422);
    expect(error.message).toContain('kaput');
    expect(error.details.trace.some((t: { path: string; outcome: string }) => t.path === 'functions[1]' && t.outcome === 'failed')).toBe(true);
    const { logs } = await b.client.App.Actions.getLogs({ id: action.id });
    expect(logs).toHaveLength(1);
    expect(logs[0]!.type).toBe('app.task.failed');
    const result = logs[0]!.data.result as { errorType: string; errorMessage: string; trace: { path: string }[] };
    expect(result.errorMessage).toContain('kaput');
    expect(result.errorType).toBeTypeOf('string');
    expect(result.trace.map((t) => t.path)).toContain('functions[1]');
  });

  it('a run past the time limit is killed and logged with TimeoutError', async () => {
    const action = await published({ name: 'forever', functions: [fn('script', { code: 'while (true) {}' })] });
    const error = await rejection(b.client.App.Actions.runWithResult('forever'));
    expect(error.code).toBe('TIMEOUT');
    const { logs } = await b.client.App.Actions.getLogs({ id: action.id });
    expect(logs).toHaveLength(1);
    expect(logs[0]!.type).toBe('app.task.failed');
    expect((logs[0]!.data.result as { errorType: string }).errorType).toBe('TimeoutError');
  });

  it('refuses a payload over the limit before anything runs; fails a result over the limit', async () => {
    const action = await published({ name: 'sizes', functions: [fn('return', { value: '{{ "x".repeat(size) }}' })] });
    const big = { text: 'y'.repeat(2100) };
    const client = await rejection(b.client.App.Actions.runWithResult('sizes', big));
    expect(client.code).toBe('PAYLOAD_TOO_LARGE');
    const raw = await b.api('POST', `/v1/apps/${appId}/tasks/sizes/run`, { json: { payload: big } });
    expect(raw.status).toBe(413);
    expect(raw.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect((await b.client.App.Actions.getLogs({ id: action.id })).count).toBe(0);
    const tooBig = await rejection(b.client.App.Actions.runWithResult('sizes', { size: 30_000 }));
    expect(tooBig.status).toBe(413);
    expect(tooBig.code).toBe('RESULT_TOO_LARGE');
    expect(await b.client.App.Actions.runWithResult('sizes', { size: 3 })).toBe('xxx');
  });

  it('live runs use the published snapshot; viewer runs the working copy; unpublished live runs fail clearly', async () => {
    const action = await b.client.App.Actions.create({ name: 'versions', functions: [fn('return', { value: 'v1' })] });
    const viewer = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, environment: 'viewer' });
    const unpublished = await rejection(b.client.App.Actions.runWithResult('versions'));
    expect(unpublished.code).toBe('ACTION_NOT_PUBLISHED');
    expect(unpublished.message).toMatch(/not published/);
    expect(await viewer.App.Actions.runWithResult('versions')).toBe('v1');
    await b.client.App.Actions.publish(action.id, true);
    await b.client.App.Actions.update(action.id, { functions: [fn('return', { value: 'v2' })] });
    expect(await b.client.App.Actions.runWithResult('versions')).toBe('v1');
    expect(await viewer.App.Actions.runWithResult('versions')).toBe('v2');
  });

  it('honours Idempotency-Key: a repeated request queues no second run', async () => {
    const action = await published({ name: 'once', functions: [fn('return', { value: 1 })] });
    const headers = { 'Idempotency-Key': 'key-123456' };
    const first = await b.api('POST', `/v1/apps/${appId}/tasks/once/run`, { json: {}, headers });
    const second = await b.api('POST', `/v1/apps/${appId}/tasks/once/run`, { json: {}, headers });
    expect(second.body.runId).toBe(first.body.runId);
    await eventually(async () => (await b.client.App.Actions.getLogs({ id: action.id })).count === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect((await b.client.App.Actions.getLogs({ id: action.id })).count).toBe(1);
  });

  it('refuses to run client actions on the server', async () => {
    await published({ name: 'device-only', environment: 'client', functions: [] });
    const raw = await b.api('POST', `/v1/apps/${appId}/tasks/device-only/run`, { json: {} });
    expect(raw.status).toBe(422);
    expect(raw.body.error.code).toBe('WRONG_ENVIRONMENT');
  });
});

describe('getLogs', () => {
  it('defaults to the 50 newest, and filters by id, limit and where', async () => {
    const many = await published({ name: 'many', functions: [fn('return', { value: '{{ i }}' })] });
    const runs = Array.from({ length: 55 }, (_, i) => i);
    for (const i of runs) expect((await b.api('POST', `/v1/apps/${appId}/tasks/many/run`, { json: { payload: { i } } })).status).toBe(202);
    await eventually(async () => (await b.client.App.Actions.getLogs({ id: many.id, limit: 1 })).count === 55, 20_000);
    const all = await b.client.App.Actions.getLogs();
    expect(all.logs).toHaveLength(50);
    const times = all.logs.map((l) => l.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const limited = await b.client.App.Actions.getLogs({ id: many.id, limit: 5 });
    expect(limited.count).toBe(55);
    expect(limited.logs).toHaveLength(5);
    expect(limited.logs.every((l) => l.data.actionId === many.id)).toBe(true);
    const where = await b.client.App.Actions.getLogs({ where: { type: 'app.task.failed' } });
    expect(where.count).toBeGreaterThanOrEqual(2);
    expect(where.logs.every((l) => l.type === 'app.task.failed')).toBe(true);
    const small = await b.client.App.Actions.getLogs({ id: many.id, where: { 'data.result': { $lt: 3 } } });
    expect(small.logs.map((l) => l.data.result).sort()).toEqual([0, 1, 2]);
  });
});

describe('rate limit of manual runs', () => {
  it('refuses runs over runsPerMinute with 429 RATE_LIMITED and retryAt', async () => {
    let now = Date.parse('2025-06-01T10:00:00Z');
    const rb = await startTestBackend({ clock: () => now, limits: { runsPerMinute: 3 } });
    try {
      const action = await rb.client.App.Actions.create({ name: 'limited', functions: [fn('return', { value: 1 })] });
      await rb.client.App.Actions.publish(action.id, true);
      for (let i = 0; i < 3; i++) {
        await rb.client.App.Actions.run('limited');
        now += 1000;
      }
      const error = await rejection(rb.client.App.Actions.run('limited'));
      expect(error.status).toBe(429);
      expect(error.code).toBe('RATE_LIMITED');
      expect(error.details.retryAt).toBe('2025-06-01T10:01:00.000Z');
      now = Date.parse('2025-06-01T10:01:00.500Z');
      await expect(rb.client.App.Actions.run('limited')).resolves.toMatchObject({ status: 'queued' });
    } finally {
      await rb.close();
    }
  });

  it('keeps the rate limit and Idempotency-Key exact under concurrent requests', async () => {
    const rb = await startTestBackend({ limits: { runsPerMinute: 10 } });
    try {
      const { appId: app, apiToken } = rb.server.bootstrap;
      const action = await rb.client.App.Actions.create({ name: 'burst', functions: [fn('return', { value: 1 })] });
      await rb.client.App.Actions.publish(action.id, true);
      const post = (key?: string) =>
        fetch(`${rb.url}/v1/apps/${app}/tasks/burst/run`, {
          method: 'POST',
          headers: { 'Auth-token': apiToken, 'Content-Type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
          body: '{}',
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { runId?: number; error?: { code: string } } }));
      // Six requests with one key, all at once: one run, the same id for all.
      const keyed = await Promise.all(Array.from({ length: 6 }, () => post('same-key')));
      expect(keyed.map((r) => r.status)).toEqual(Array(6).fill(202));
      expect(new Set(keyed.map((r) => r.body.runId)).size).toBe(1);
      // 20 more at once: exactly 9 fit in the minute's 10.
      const burst = await Promise.all(Array.from({ length: 20 }, () => post()));
      expect(burst.filter((r) => r.status === 202)).toHaveLength(9);
      expect(burst.filter((r) => r.status === 429 && r.body.error?.code === 'RATE_LIMITED')).toHaveLength(11);
    } finally {
      await rb.close();
    }
  });
});
