// @vitest-environment node
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionLog } from '../../src/actions/types.js';
import type { TraceEntry } from '../../src/pipeline/types.js';
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

/** The raw record (as any HTTP caller reads it), for one action. */
async function logOf(actionId: number): Promise<ActionLog> {
  return eventually(async () => {
    const res = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { id: actionId } });
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
    // The client's getLogs gives the same record.
    const page = await b.client.App.Actions.getLogs({ id: action.id });
    expect(page.logs[0]!.data.trace).toEqual(log.data.trace);
  });

  it('a failed server run keeps its trace in data.trace and, as before, in result.trace', async () => {
    const action = await b.client.App.Actions.create({
      name: 'traced-failure',
      functions: [{ functionPackage: F('set'), settings: { x: '{{ missing.x }}' } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    await b.client.App.Actions.run('traced-failure');
    const log = await logOf(action.id);
    expect(log.type).toBe('app.task.failed');
    expect(log.data.trace).toEqual([expect.objectContaining({ path: 'functions[0]', outcome: 'failed', startMs: expect.any(Number) })]);
    expect((log.data.result as { trace: unknown }).trace).toEqual(log.data.trace);
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
