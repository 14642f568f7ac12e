// @vitest-environment node
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { rejection } from '../helpers/wait.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** `p`, or `'pending'` if it has not settled within `ms`. */
const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))]);

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend();
  appId = b.server.bootstrap.appId;
});
afterAll(() => b.close());

/** A client on a screen of its own, with a screen-targeted `client` action for it. */
async function screenClient(name: string, limits?: Record<string, number>, extra: Record<string, unknown> = {}) {
  const page = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name, script: '' } });
  const pageId = page.body.page.id as number;
  const screen = createClient({
    baseUrl: b.url,
    appId,
    authToken: b.server.bootstrap.apiToken,
    pageId,
    environment: 'viewer',
    logger: quiet,
    ...(limits ? { limits } : {}),
  });
  const action = await screen.App.Actions.create({ name, environment: 'client', pageId, ...extra });
  return { screen, action };
}

describe('device runs of screen-targeted actions: failures', () => {
  it('a handler result that is not JSON fails the run with RESULT_NOT_SERIALIZABLE and writes its one log', async () => {
    const { screen, action } = await screenClient('circular-result');
    screen.Page.onRemoteExecution(() => {
      const o: Record<string, unknown> = { a: 1 };
      o.self = o;
      return o;
    });
    const error = await rejection(screen.App.Actions.runWithResult('circular-result'));
    expect(error.name).toBe('ClientError');
    expect(error.code).toBe('RESULT_NOT_SERIALIZABLE');
    expect(error.details.errorType).toBe('ResultError');
    const logs = await screen.App.Actions.getLogs({ id: action.id });
    expect(logs.count).toBe(1);
    expect(logs.logs[0]).toMatchObject({
      type: 'app.task.failed',
      data: { source: 'device', result: { code: 'RESULT_NOT_SERIALIZABLE', errorType: 'ResultError' } },
    });

    screen.Page.onRemoteExecution(() => ({ big: 10n }));
    expect((await rejection(screen.App.Actions.runWithResult('circular-result'))).code).toBe('RESULT_NOT_SERIALIZABLE');
    expect((await screen.App.Actions.getLogs({ id: action.id })).count).toBe(2);
  });

  it('a handler result with values JSON drops (functions) resolves with its JSON copy and is logged', async () => {
    const { screen, action } = await screenClient('function-result');
    screen.Page.onRemoteExecution(() => ({ a: 1, f: () => 2, at: new Date('2025-01-01T00:00:00Z') }));
    expect(await screen.App.Actions.runWithResult('function-result')).toEqual({ a: 1, at: '2025-01-01T00:00:00.000Z' });
    const logs = await screen.App.Actions.getLogs({ id: action.id });
    expect(logs.count).toBe(1);
    expect(logs.logs[0]).toMatchObject({ type: 'app.action.completed', data: { result: { a: 1, at: '2025-01-01T00:00:00.000Z' } } });
  });

  it('a handler that never settles fails with TIMEOUT (TimeoutError) after limits.runTimeoutMs, logged like other timeouts', async () => {
    const { screen, action } = await screenClient('never-settles', { runTimeoutMs: 100 });
    screen.Page.onRemoteExecution(() => new Promise(() => {}));
    const started = Date.now();
    const error = await rejection(screen.App.Actions.runWithResult('never-settles'));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error.code).toBe('TIMEOUT');
    expect(error.details.errorType).toBe('TimeoutError');
    const logs = await screen.App.Actions.getLogs({ id: action.id });
    expect(logs.count).toBe(1);
    expect(logs.logs[0]).toMatchObject({ type: 'app.task.failed', data: { source: 'device', result: { code: 'TIMEOUT', errorType: 'TimeoutError' } } });

    // A handler that settles in time is unaffected, and a late rejection of a timed-out one is not unhandled.
    screen.Page.onRemoteExecution(() => new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 150)));
    expect((await rejection(screen.App.Actions.runWithResult('never-settles'))).code).toBe('TIMEOUT');
    screen.Page.onRemoteExecution(async () => 'quick');
    expect(await screen.App.Actions.runWithResult('never-settles')).toBe('quick');
    await new Promise((r) => setTimeout(r, 100));
  }, 15_000);

  it('an analytics-triggered screen run that never settles times out and does not stall the later triggered runs', async () => {
    const onLabel = (label: string) => [{ trigger: 'analytics' as const, where: { type: 'analytics.pageView', data: { label } } }];
    // The limit applies to both runs: the second (a QuickJS pipeline) must fit in it on a loaded 2-core machine,
    // where a cold engine's first run alone can take over 100 ms.
    const { screen, action } = await screenClient('stalls-analytics', { runTimeoutMs: 2_000 }, { triggers: onLabel('stall') });
    const after = await screen.App.Actions.create({
      name: 'after-stall',
      environment: 'client',
      triggers: onLabel('next'),
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: 'ran' } }],
    });
    screen.Page.onRemoteExecution(() => new Promise(() => {}));
    screen.App.Analytics.pageView('stall');
    screen.App.Analytics.pageView('next');
    expect(await within(screen.App.Analytics.idle(), 15_000)).toBeUndefined();
    const stalled = await screen.App.Actions.getLogs({ id: action.id });
    expect(stalled.logs.map((l) => l.data.result)).toMatchObject([{ code: 'TIMEOUT', errorType: 'TimeoutError' }]);
    expect(stalled.logs[0]!.data.trigger).toBe('analytics');
    const next = await screen.App.Actions.getLogs({ id: after.id });
    expect(next.logs.map((l) => l.data.result)).toEqual(['ran']);
  }, 30_000);
});
