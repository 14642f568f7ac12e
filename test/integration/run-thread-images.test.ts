import { afterEach, describe, expect, it } from 'vitest';
import type { RunOutcome, RunPipelineOptions } from '../../src/contract/pipeline.js';
import { createRunPool, type RunPool } from '../../src/server/actions/threads/pool.js';

/**
 * Server run threads (src/server/actions/threads/) get the compiled QuickJS module and its layout from the pool,
 * so their runs are put back from memory images like the device engine's (src/sandbox/memory-image.ts). The
 * real thread entry, real QuickJS: every thread says it has images and counts its restores, and a run that
 * pollutes its sandbox leaves nothing for the next run of the same action on that thread.
 */
const F = (name: string) => `com.client.function.${name}`;
const LEAKY = [
  {
    functionPackage: F('script'),
    settings: {
      code: [
        'const seen = { global: globalThis.leaked ?? null, proto: ({}).polluted ?? null, math: Math.max === Math.min };',
        'globalThis.leaked = (globalThis.leaked ?? 0) + 1;',
        'Object.prototype.polluted = "yes";',
        'Math.max = Math.min;',
        'context.out = { seen, random: Math.random() };',
      ].join('\n'),
    },
  },
  { functionPackage: F('return'), settings: { value: '{{ out }}' } },
];
const services = { dataSources: { connect: () => ({}) as never }, notifications: { create: async () => ({}) } };
const run = (pool: RunPool): Promise<RunOutcome> =>
  // A loaded machine: the run's time limit is generous, nothing here waits on it.
  pool.runPipeline({ functions: LEAKY, payload: {}, environment: 'server', services, limits: { runTimeoutMs: 60_000 } } as unknown as RunPipelineOptions);

let pool: RunPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('server run threads: memory images', () => {
  it('every thread has images on, and a run that pollutes its sandbox leaves nothing for the next', async () => {
    pool = createRunPool({ size: 1, memoryMb: 128 });
    const outcomes: RunOutcome[] = [];
    for (let i = 0; i < 6; i++) outcomes.push(await run(pool));
    const threads = pool.threads();
    expect(threads.length).toBeGreaterThan(0);
    expect(threads.every((t) => t.memoryImages)).toBe(true);
    // Put back from the image, not rebuilt: the second of two back-to-back runs primes and saves it, and each later
    // run's sandbox is restored when it closes (counted up to the run before the last outcome).
    expect(threads[0]!.restores).toBeGreaterThanOrEqual(2);
    const results = outcomes.map((o) => {
      if (!o.ok) throw new Error(`run failed: ${JSON.stringify(o.error)}`);
      return o.result as { seen: unknown; random: number };
    });
    for (const r of results) expect(r.seen).toEqual({ global: null, proto: null, math: false });
    // Math.random is reseeded on every restore: no two runs draw the same number.
    expect(new Set(results.map((r) => r.random)).size).toBe(results.length);
  });
});
