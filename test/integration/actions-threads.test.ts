import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually, rejection } from '../helpers/wait.js';

/**
 * Server runs on the run thread pool (issue 15): a run's CPU time does not delay API requests, a thread that
 * crashes or passes its memory limit fails only its own run, and the next run works.
 */
const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });
const script = (code: string) => fn('script', { code });

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend({
    limits: { runTimeoutMs: 5000, runsPerMinute: 1000, runThreads: 2, appConcurrency: 2, runThreadMemoryMb: 24, resultBytes: 200 * 1024 * 1024 },
  });
  appId = b.server.bootstrap.appId;
});
afterAll(() => b.close());

async function published(name: string, functions: unknown[]) {
  const action = await b.client.App.Actions.create({ name, functions: functions as never });
  await b.client.App.Actions.publish(action.id, true);
  return action;
}

const timed = async <T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> => {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
};

describe('run threads', () => {
  it('a spinning run does not delay API requests; it is stopped at its time limit', async () => {
    const spin = await published('spin', [script('while (true) {}')]);
    await published('ping', [fn('return', { value: 'pong' })]);
    const started = performance.now();
    const waited = b.api('POST', `/v1/apps/${appId}/tasks/spin/run`, { json: { wait: true } });
    // Give the run time to be claimed and start spinning on its thread.
    await new Promise((r) => setTimeout(r, 1000));
    const gets: number[] = [];
    while (performance.now() - started < 4000) {
      const { ms, value } = await timed(() => b.api('GET', `/v1/apps/${appId}/tasks/spin`));
      expect(value.status).toBe(200);
      gets.push(ms);
    }
    expect(gets.length).toBeGreaterThan(3);
    // Generous bound for a loaded 2-core machine: inline, each GET waited for the run (about 5 s).
    expect(Math.max(...gets)).toBeLessThan(1000);
    // Another run goes on the other thread meanwhile.
    expect(await b.client.App.Actions.runWithResult('ping')).toBe('pong');
    const answer = await waited;
    expect(answer.status).toBe(422);
    expect(answer.body.error.code).toBe('TIMEOUT');
    const { logs } = await b.client.App.Actions.getLogs({ id: spin.id });
    expect(logs).toHaveLength(1);
    expect((logs[0]!.data.result as { errorType: string }).errorType).toBe('TimeoutError');
  }, 30_000);

  it('a thread past its memory limit fails only its run with WORKER_OUT_OF_MEMORY; the next run works', async () => {
    const hog = await published('hog', [script('return "x".repeat(24 << 20);')]);
    await published('after', [fn('return', { value: '{{ n + 1 }}' })]);
    const error = await rejection(b.client.App.Actions.runWithResult('hog'));
    expect(error.code).toBe('WORKER_OUT_OF_MEMORY');
    const { logs } = await b.client.App.Actions.getLogs({ id: hog.id });
    expect(logs).toHaveLength(1);
    expect(logs[0]!.type).toBe('app.task.failed');
    expect(logs[0]!.data.result).toMatchObject({ code: 'WORKER_OUT_OF_MEMORY', errorType: 'OutOfMemoryError' });
    // Not retried: still one record, and the next runs work (on a fresh thread).
    expect(await b.client.App.Actions.runWithResult('after', { n: 1 })).toBe(2);
    expect(await b.client.App.Actions.runWithResult('after', { n: 2 })).toBe(3);
    await new Promise((r) => setTimeout(r, 300));
    expect((await b.client.App.Actions.getLogs({ id: hog.id })).logs).toHaveLength(1);
  }, 30_000);
});
