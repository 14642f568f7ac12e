import { afterEach, describe, expect, it } from 'vitest';
import { createRunPool, type RunPool } from '../../src/server/actions/threads/pool.js';
import type { RunPipelineOptions } from '../../src/contract/pipeline.js';

/**
 * The run thread pool's containment with threads that misbehave (test/fixtures/hostile-thread.mjs speaks the
 * protocol without an engine): a thread that does not answer is terminated at its run's time limit plus the
 * grace, one that throws or exits fails only its run, and every later run gets a fresh thread.
 */
const entry = new URL('../fixtures/hostile-thread.mjs', import.meta.url);
const services = { dataSources: { connect: () => ({}) as never }, notifications: { create: async () => ({}) } };
const run = (pool: RunPool, payload: Record<string, unknown>, runTimeoutMs = 300): ReturnType<RunPool['runPipeline']> =>
  pool.runPipeline({ functions: [], payload, environment: 'server', services, limits: { runTimeoutMs } } as RunPipelineOptions);

let pool: RunPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('run thread pool', () => {
  it('terminates a thread that does not answer after the time limit: TIMEOUT, and the next run gets a new thread', async () => {
    pool = createRunPool({ size: 1, memoryMb: 64, graceMs: 200, entry });
    const first = await run(pool, {});
    expect(first.ok).toBe(true);
    const started = performance.now();
    const hung = await run(pool, { hang: true });
    expect(hung.ok).toBe(false);
    expect(!hung.ok && hung.error.code).toBe('TIMEOUT');
    expect(performance.now() - started).toBeLessThan(5000);
    const next = await run(pool, {});
    expect(next.ok && next.result).not.toBe(first.ok && first.result);
  });

  it('an abort ends a hung run with ABORTED after the grace', async () => {
    pool = createRunPool({ size: 1, memoryMb: 64, graceMs: 200, entry });
    const controller = new AbortController();
    const pending = pool.runPipeline({
      functions: [],
      payload: { hang: true },
      environment: 'server',
      services,
      limits: { runTimeoutMs: 60_000 },
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 200);
    const outcome = await pending;
    expect(!outcome.ok && outcome.error.code).toBe('ABORTED');
    expect((await run(pool, {})).ok).toBe(true);
  });

  it('a thread that throws or exits fails only its own run with WORKER_CRASHED', async () => {
    pool = createRunPool({ size: 2, memoryMb: 64, entry });
    const [thrown, fine, exited] = await Promise.all([run(pool, { throw: true }, 5000), run(pool, {}, 5000), run(pool, { exit: true }, 5000)]);
    expect(!thrown.ok && thrown.error).toMatchObject({ code: 'WORKER_CRASHED', errorType: 'WorkerError' });
    expect(!thrown.ok && thrown.error.errorMessage).toContain('thread failure');
    expect(fine.ok).toBe(true);
    expect(!exited.ok && exited.error).toMatchObject({ code: 'WORKER_CRASHED' });
    expect((await run(pool, {})).ok).toBe(true);
  });

  const deep = (levels: number) => {
    let value: Record<string, unknown> = {};
    for (let i = 0; i < levels; i++) value = { a: value };
    return value;
  };

  it('a run that cannot be posted to its thread fails at once, and frees the thread', async () => {
    pool = createRunPool({ size: 1, memoryMb: 64, graceMs: 200, entry });
    // Deeper and deeper payloads, until one cannot reach the thread: the structured clone of postMessage gives up
    // before the pool's JSON copy does (a definition stored before the limits), so that one fails in the post.
    let outcome = await run(pool, {}, 60_000);
    let levels = 1000;
    let started = performance.now();
    for (; outcome.ok && levels <= 50_000; levels += 500) {
      started = performance.now();
      outcome = await run(pool, { deep: deep(levels) }, 60_000);
    }
    expect(!outcome.ok && outcome.error.code).toBe('INVALID_PAYLOAD');
    expect(!outcome.ok && outcome.error.errorMessage).toMatch(/cannot be passed to its thread: /);
    expect(!outcome.ok && outcome.error.errorMessage).not.toMatch(/as JSON/);
    expect((await run(pool, {}, 60_000)).ok).toBe(true);
    expect(performance.now() - started).toBeLessThan(10_000); // not the 60 s time limit
  });

  it('a host answer that cannot be passed to the thread fails the call, not the thread', async () => {
    pool = createRunPool({ size: 1, memoryMb: 64, graceMs: 200, entry });
    const answering = (value: unknown) => ({ ...services, notifications: { create: async () => value as Record<string, unknown> } });
    const call = (value: unknown) =>
      pool!.runPipeline({
        functions: [],
        payload: { call: true },
        environment: 'server',
        services: answering(value),
        limits: { runTimeoutMs: 60_000 },
      } as RunPipelineOptions);
    const started = performance.now();
    const failed = await call(deep(20_000));
    expect(!failed.ok && failed.error.errorMessage).toMatch(/cannot be passed to the run/);
    expect(await call({ fine: 1 })).toMatchObject({ ok: true, result: { fine: 1 } });
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
