import { afterEach, describe, expect, it } from 'vitest';
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
// The memory test has a long time limit: a thread near its heap limit collects garbage for seconds before it dies,
// and more so on a loaded machine.
const limits = { runsPerMinute: 1000, runThreads: 2, appConcurrency: 2, runThreadMemoryMb: 24, resultBytes: 200 * 1024 * 1024 };
const start = async (runTimeoutMs: number) => {
  b = await startTestBackend({ limits: { ...limits, runTimeoutMs } });
  appId = b.server.bootstrap.appId;
};
afterEach(() => b?.close());

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
    await start(5000);
    // The run says it has started (an entry) before it spins, so the GETs below are measured while it spins
    // (a fixed wait could end before a cold first thread has even started).
    const marks = await b.client.DataSources.create({ name: 'spin marks' });
    const spin = await published('spin', [script(`await Client.DataSources.connect(${marks.id}).insert({ spinning: true }); while (true) {}`)]);
    await published('ping', [fn('return', { value: 'pong' })]);
    const waited = b.api('POST', `/v1/apps/${appId}/tasks/spin/run`, { json: { wait: true } });
    const conn = await b.client.DataSources.connect(marks.id);
    await eventually(async () => (await conn.find()).length === 1, 20_000);
    const started = performance.now();
    const gets: number[] = [];
    while (performance.now() - started < 2000) {
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
  }, 40_000);

  it('a thread past its memory limit fails only its run with WORKER_OUT_OF_MEMORY; the next run works', async () => {
    await start(60_000);
    const hog = await published('hog', [script('return "x".repeat(24 << 20);')]);
    await published('after', [fn('return', { value: '{{ n + 1 }}' })]);
    // A run on the other thread, going on until the test raises a flag after the hog's thread has died, is not lost.
    const flags = await b.client.DataSources.create({ name: 'flags' });
    const survivor = await published('survivor', [
      script(`const flags = Client.DataSources.connect(${flags.id});
        while (!(await flags.findOne())) { const t = Date.now(); while (Date.now() - t < 50) {} }
        return "survived";`),
    ]);
    const meanwhile = b.client.App.Actions.runWithResult('survivor');
    const error = await rejection(b.client.App.Actions.runWithResult('hog'));
    expect(error.code).toBe('WORKER_OUT_OF_MEMORY');
    await (await b.client.DataSources.connect(flags.id)).insert({ hogDied: true });
    expect(await meanwhile).toBe('survived');
    expect((await b.client.App.Actions.getLogs({ id: survivor.id })).logs.map((log) => log.type)).toEqual(['app.action.completed']);
    const { logs } = await b.client.App.Actions.getLogs({ id: hog.id });
    expect(logs).toHaveLength(1);
    expect(logs[0]!.type).toBe('app.task.failed');
    expect(logs[0]!.data.result).toMatchObject({ code: 'WORKER_OUT_OF_MEMORY', errorType: 'OutOfMemoryError' });
    // Not retried: still one record, and the next runs work (on a fresh thread).
    expect(await b.client.App.Actions.runWithResult('after', { n: 1 })).toBe(2);
    expect(await b.client.App.Actions.runWithResult('after', { n: 2 })).toBe(3);
    await new Promise((r) => setTimeout(r, 300));
    expect((await b.client.App.Actions.getLogs({ id: hog.id })).logs).toHaveLength(1);
  }, 90_000);
});
