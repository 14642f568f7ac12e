// @vitest-environment node
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionLog } from '../../src/contract/actions.js';
import type { TraceEntry } from '../../src/contract/pipeline.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/** Every run's log record keeps its trace in `data.trace` (docs/actions.md "Logs", docs/pipeline.md "Trace"). */
const F = (name: string) => `com.client.function.${name}`;

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend({ limits: { runsPerMinute: 1000 } });
  appId = b.server.bootstrap.appId;
});
afterAll(() => b.close());

const functions = [
  { functionPackage: F('set'), settings: { apiToken: 'abc123', headers: { Authorization: 'Bearer xyz' }, n: '{{ n }}' } },
  {
    type: 'loop' as const,
    range: { from: 1, to: '{{ n }}' },
    functions: [
      {
        type: 'if' as const,
        conditions: [{ condition: 'currentItem % 2 === 0', functions: [{ functionPackage: F('set'), settings: { even: '{{ currentItem }}' } }] }],
      },
    ],
  },
  {
    functionPackage: F('script'),
    retry: { attempts: 2 },
    settings: { code: "if (!context.once) { context.once = true; throw new Error('first attempt'); } return { big: 'x'.repeat(5000) };" },
  },
  { functionPackage: F('return'), settings: { value: '{{ even }}' } },
];

/** The raw record (as any HTTP caller reads it, trace included), for one action. */
async function logOf(actionId: number): Promise<ActionLog> {
  return eventually(async () => {
    const res = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { id: actionId, trace: true } });
    return res.body.count === 1 && (res.body.logs[0] as ActionLog);
  });
}

function expectTrace(trace: TraceEntry[] | undefined) {
  expect(trace).toBeDefined();
  const entries = trace!;
  for (const t of entries) {
    expect(t).toMatchObject({ path: expect.any(String), package: expect.any(String), outcome: expect.any(String), durationMs: expect.any(Number) });
    expect(t.startMs).toBeGreaterThanOrEqual(0);
  }
  const by = (path: string, outcome = 'ok') => entries.filter((t) => t.path === path && t.outcome === outcome);
  // The settings as evaluated, secrets redacted; a set returns them.
  expect(by('functions[0]')[0]).toMatchObject({
    package: F('set'),
    input: { apiToken: '[redacted]', headers: { Authorization: '[redacted]' }, n: 2 },
    output: { apiToken: '[redacted]', headers: { Authorization: '[redacted]' }, n: 2 },
  });
  // The loop and the if in it.
  expect(by('functions[1]')[0]).toMatchObject({ package: 'loop', input: { from: 1, to: 2 }, output: { iterations: 2 } });
  expect(by('functions[1].functions[0]').map((t) => [t.iteration, t.input, t.output])).toEqual([
    [0, { conditions: [false] }, { branch: null }],
    [1, { conditions: [true] }, { branch: 'conditions[0]' }],
  ]);
  expect(by('functions[1].functions[0].conditions[0].functions[0]')[0]).toMatchObject({ iteration: 1, input: { even: 2 }, output: { even: 2 } });
  // Retried once; the output over 4,096 characters of JSON is truncated.
  expect(by('functions[2]', 'retried')[0]).toMatchObject({ message: expect.stringContaining('first attempt') });
  const script = by('functions[2]')[0]!;
  expect(script.retries).toBe(1);
  expect(script.input).toMatchObject({ code: expect.stringContaining('context.once') });
  const text = JSON.stringify({ big: 'x'.repeat(5000) });
  expect(script.output).toEqual({ $truncated: true, length: text.length, preview: text.slice(0, 4096) });
  expect(by('functions[3]')[0]).toMatchObject({ package: F('return'), input: { value: 2 }, output: 2 });
  // Nothing secret anywhere in the record.
  expect(JSON.stringify(entries)).not.toMatch(/abc123|xyz/);
}

describe('a trace in every run log record', () => {
  it('a successful server run stores data.trace: each node with its start, duration, outcome, retries, input and output', async () => {
    const action = await b.client.App.Actions.create({ name: 'traced', functions });
    await b.client.App.Actions.publish(action.id, true);
    expect(await b.client.App.Actions.runWithResult('traced', { n: 2 })).toBe(2);
    const log = await logOf(action.id);
    expect(log.type).toBe('app.action.completed');
    expect(log.data.result).toBe(2);
    expectTrace(log.data.trace);
    // The client's getLogs gives the same record with `trace: true`, and leaves the trace out by default.
    const page = await b.client.App.Actions.getLogs({ id: action.id, trace: true });
    expect(page.logs[0]!.data.trace).toEqual(log.data.trace);
    const plain = await b.client.App.Actions.getLogs({ id: action.id });
    expect(plain.logs[0]).toEqual({ ...log, data: { ...log.data, trace: undefined } });
    expect('trace' in plain.logs[0]!.data).toBe(false);
    const get = await b.api('GET', `/v1/apps/${appId}/tasks/logs?id=${action.id}`);
    expect('trace' in get.body.logs[0].data).toBe(false);
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/logs?id=${action.id}&trace=true`)).body.logs[0].data.trace).toEqual(log.data.trace);
    // A `where` still sees the trace; the answer does not hold it.
    const where = await b.client.App.Actions.getLogs({ where: { 'data.trace.package': 'loop' } });
    expect(where.logs.map((l) => [l.id, 'trace' in l.data])).toEqual([[log.id, false]]);
    // A `where` that names no trace (read without traces) finds the same record, with its trace when asked for.
    const byResult = { 'data.actionId': action.id, $or: [{ 'data.result': 2 }, { 'data.result': { $gt: 99 } }] };
    expect((await b.client.App.Actions.getLogs({ where: byResult })).logs).toEqual(plain.logs);
    expect((await b.client.App.Actions.getLogs({ where: byResult, trace: true })).logs[0]!.data.trace).toEqual(log.data.trace);
    // One that reads the whole `data` sees the trace too: equal to the record's data without it, it matches nothing.
    expect((await b.client.App.Actions.getLogs({ where: { data: plain.logs[0]!.data } })).count).toBe(0);
  });

  it('getLogs without traces reads records whose values jsonb cannot hold (a NUL character)', async () => {
    const action = await b.client.App.Actions.create({
      name: 'traced-nul',
      functions: [{ functionPackage: F('script'), settings: { code: "return 'a' + String.fromCharCode(0) + 'b';" } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    expect(await b.client.App.Actions.runWithResult('traced-nul')).toBe('a\u0000b');
    const page = await b.client.App.Actions.getLogs({ id: action.id });
    expect(page.logs.map((l) => [l.data.result, 'trace' in l.data])).toEqual([['a\u0000b', false]]);
    expect((await logOf(action.id)).data.trace).toHaveLength(1);
  });

  it('getLogs without traces, and a where read without them, take a lone UTF-16 surrogate (half an emoji)', async () => {
    const action = await b.client.App.Actions.create({
      name: 'traced-surrogate',
      functions: [{ functionPackage: F('script'), settings: { code: "return '😀x'.slice(1);" } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    const half = '😀x'.slice(1);
    expect(await b.client.App.Actions.runWithResult('traced-surrogate')).toBe(half);
    const page = await b.client.App.Actions.getLogs({ id: action.id });
    expect(page.logs.map((l) => [l.data.result, 'trace' in l.data])).toEqual([[half, false]]);
    const where = await b.client.App.Actions.getLogs({ where: { 'data.actionId': action.id } });
    expect(where.logs.map((l) => [l.data.result, 'trace' in l.data])).toEqual([[half, false]]);
  });

  it('getLogs with traces answers at most 100 records; bad trace options are refused', async () => {
    const tooMany = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { limit: 101, trace: true } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatchObject({ code: 'INVALID_FIELD', message: expect.stringContaining('100') });
    expect((await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { limit: 1000, trace: false } })).status).toBe(200);
    expect((await b.api('GET', `/v1/apps/${appId}/tasks/logs?trace=yes`)).body.error.code).toBe('INVALID_FIELD');
    await expect(b.client.App.Actions.getLogs({ limit: 101, trace: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(b.client.App.Actions.getLogs({ trace: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('a failed server run keeps its trace in data.trace and, without values, in result.trace', async () => {
    const action = await b.client.App.Actions.create({
      name: 'traced-failure',
      functions: [{ functionPackage: F('set'), settings: { x: '{{ missing.x }}' } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    await b.client.App.Actions.run('traced-failure');
    const log = await logOf(action.id);
    expect(log.type).toBe('app.task.failed');
    expect(log.data.trace).toEqual([expect.objectContaining({ path: 'functions[0]', outcome: 'failed', startMs: expect.any(Number) })]);
    // The spec's failure trace (path, package, error) once more, without the nodes' input and output.
    expect((log.data.result as { trace: unknown }).trace).toEqual(log.data.trace!.map(({ input: _i, output: _o, ...entry }) => entry));
    const run = await b.client.App.Actions.getRun(log.data.runId as number);
    expect(run).toMatchObject({ status: 'failed', error: { code: log.data.result && (log.data.result as { code: string }).code } });
    expect(run.trace).toEqual(log.data.trace);
  });

  it('secrets are redacted on the host: URL parameters, userinfo, bearer tokens, and after user code patched the guest', async () => {
    const action = await b.client.App.Actions.create({
      name: 'traced-secrets',
      functions: [
        {
          functionPackage: F('set'),
          settings: {
            url: 'https://api.example.com/v1/items?access_token=sekrit1&q=ok',
            pwd: 'sekrit2',
            header: 'Bearer sekrit3sekrit3',
            proxy: 'https://user:sekrit4@proxy.example.com/',
            plain: 'https://example.com/?page=2',
            signed: 'https://bucket.example.com/o?X-Amz-Signature=sekrit8&X-Amz-Date=20260101',
            asUser: 'https://ghp_sekrit9abc@github.com/org/repo.git',
            prose: 'Basic information about the token expiration',
          },
        },
        // User code breaks the guest's redaction (it lowercases with a patched built-in) before returning a password.
        {
          functionPackage: F('script'),
          settings: {
            code: "String.prototype.toLowerCase = function () { return ''; }; var s = 'sek' + 'rit'; return { password: s + 5, long: 'y'.repeat(5000) + 'Bearer ' + s + '6' + s };",
          },
        },
        { functionPackage: F('script'), settings: { code: "return { note: 'ok', secret: { deep: 'sek' + 'rit7' }, tail: 'z'.repeat(5000) };" } },
      ],
    });
    await b.client.App.Actions.publish(action.id, true);
    await b.client.App.Actions.runWithResult('traced-secrets');
    const log = await logOf(action.id);
    const text = JSON.stringify(log.data.trace);
    expect(text).not.toMatch(/sekrit/);
    const entries = log.data.trace!;
    expect(entries[0]!.input).toEqual({
      url: 'https://api.example.com/v1/items?access_token=[redacted]&q=ok',
      pwd: '[redacted]',
      header: 'Bearer [redacted]',
      proxy: 'https://user:[redacted]@proxy.example.com/',
      plain: 'https://example.com/?page=2',
      signed: 'https://bucket.example.com/o?X-Amz-Signature=[redacted]&X-Amz-Date=20260101',
      asUser: 'https://[redacted]@github.com/org/repo.git',
      prose: 'Basic information about the token expiration',
    });
    expect(entries[1]!.output).toMatchObject({ $truncated: true, preview: expect.stringContaining('"password":"[redacted]"') });
    expect(entries[2]!.output).toMatchObject({ $truncated: true, preview: '{"note":"ok",' });
  });

  it('a device run uploads its log record with data.trace', async () => {
    const action = await b.client.App.Actions.create({ name: 'traced-device', environment: 'client', functions });
    await b.client.App.Actions.publish(action.id, true);
    expect(await b.client.App.Actions.runWithResult('traced-device', { n: 2 })).toBe(2);
    const log = await logOf(action.id);
    expect(log.data.source).toBe('device');
    expect(log.deviceKey).toEqual(expect.any(String));
    expectTrace(log.data.trace);
  });
});
