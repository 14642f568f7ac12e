/**
 * Pipeline engine benchmark (`npm run bench`). Prints one table; each sandboxed figure has a
 * baseline measured in the same run (native JS, or bare QuickJS calls on the same module).
 */
import { loadavg } from 'node:os';
import { test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import type { HostServices, LoopNode, PipelineNode } from '../../src/contract/pipeline.js';
import { acquireModule, releaseModule } from '../../src/sandbox/pool.js';

const services: HostServices = {
  dataSources: { connect: () => ({}) as never },
  notifications: { create: async () => ({}) },
};
const F = (name: string) => `com.client.function.${name}`;

/** Median of 5 batches (each at least `minMs` and `minRuns` calls) of the mean time per call, ms. */
async function timeIt(fn: () => unknown | Promise<unknown>, minMs = 400, minRuns = 5): Promise<number> {
  for (let i = 0; i < 3; i++) await fn(); // warm-up
  const batches: number[] = [];
  for (let b = 0; b < 5; b++) {
    const start = performance.now();
    let runs = 0;
    while (runs < minRuns || performance.now() - start < minMs / 5) {
      await fn();
      runs++;
    }
    batches.push((performance.now() - start) / runs);
  }
  return batches.sort((x, y) => x - y)[2]!;
}

const run = async (functions: PipelineNode[], payload?: Record<string, unknown>) => {
  const options = { environment: 'client', services, functions, payload, limits: { payloadChars: 1e7 } } as const;
  const outcome = await runPipeline(options);
  if (!outcome.ok) throw new Error(`${outcome.error.code}: ${outcome.error.errorMessage}`);
  return outcome.result;
};

test('pipeline engine', async () => {
  const rows: { measurement: string; sandboxed: string; baseline: string; ratio: string; target: string }[] = [];
  const fmt = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);
  const add = (measurement: string, sandboxed: number, baseline: number | undefined, baselineName: string, target = '') =>
    rows.push({
      measurement,
      sandboxed: fmt(sandboxed),
      baseline: baseline === undefined ? '' : `${fmt(baseline)} (${baselineName})`,
      ratio: baseline === undefined ? '' : `${(sandboxed / baseline).toFixed(1)}x`,
      target,
    });

  // Cold: the first run of this process (wasm compile + module instantiation + run).
  const coldStart = performance.now();
  await run([{ functionPackage: F('return'), settings: { value: '{{ 1 + 2 }}' } }]);
  const cold = performance.now() - coldStart;
  add('cold first run (wasm compile + instantiate + tiny pipeline)', cold, undefined, '');

  // Warm fresh run: runtime + context + tiny pipeline, vs bare runtime + context + evalCode on the same module.
  const tiny: PipelineNode[] = [{ functionPackage: F('return'), settings: { value: '{{ 1 + 2 }}' } }];
  const module = await acquireModule(128 * 1024 * 1024);
  const bare = await timeIt(
    () => {
      const rt = module.quickjs.newRuntime();
      const ctx = rt.newContext();
      ctx.unwrapResult(ctx.evalCode('1 + 2')).dispose();
      ctx.dispose();
      rt.dispose();
    },
    600,
    50,
  );
  releaseModule(module);
  const fresh = await timeIt(() => run(tiny), 600, 50);
  add('fresh run, tiny pipeline (warm)', fresh, bare, 'bare runtime+context+evalCode', '< 1 ms');

  // 10,000-item loop with an if per item, vs the same logic as native JS.
  const items = Array.from({ length: 10_000 }, (_, i) => i);
  const loop: PipelineNode[] = [
    { functionPackage: F('script'), settings: { code: 'return { items: Array.from({ length: 10000 }, (_, i) => i), even: 0 }' } },
    {
      type: 'loop',
      items: 'items',
      functions: [
        { type: 'if', conditions: [{ condition: 'currentItem % 2 === 0', functions: [{ functionPackage: F('set'), settings: { even: '{{ even + 1 }}' } }] }] },
      ],
    },
    { functionPackage: F('return'), settings: { value: '{{ even }}' } },
  ];
  const loopMs = await timeIt(() => run(loop), 1000, 3);
  const nativeMs = await timeIt(() => {
    const ctx: Record<string, number> = { even: 0 };
    for (const item of items) if (item % 2 === 0) ctx.even! += 1;
    return ctx.even;
  });
  add('10,000-item loop with an if per item', loopMs, nativeMs, 'native JS', '< 200 ms');
  // The same loop with a per-node timeout policy: compiled into the segment (DLH around the node).
  const withTimeout = (node: PipelineNode): PipelineNode =>
    node.type === 'loop'
      ? { ...node, timeout: 60_000, functions: node.functions?.map(withTimeout) }
      : node.type === 'if'
        ? { ...node, timeout: 60_000, conditions: node.conditions.map((c) => ({ ...c, functions: c.functions?.map(withTimeout) })) }
        : { ...node, timeout: 60_000, functions: node.functions?.map(withTimeout) };
  const timedLoop: PipelineNode[] = [loop[0]!, { ...(loop[1] as PipelineNode), timeout: 60_000 }, loop[2]!];
  add('same loop, loop node with a timeout (compiled)', await timeIt(() => run(timedLoop), 1000, 3), nativeMs, 'native JS', '≤ 40 ms');
  add('same loop, every node with a timeout (compiled)', await timeIt(() => run(loop.map(withTimeout)), 1000, 3), nativeMs, 'native JS');
  // Inner timeouts shorter than the deadline in force: each timed node moves the host's deadline (2 host calls).
  const shorter = (node: PipelineNode): PipelineNode => {
    const t = { ...withTimeout(node) } as PipelineNode;
    if (t.type === 'if') t.conditions = t.conditions.map((c) => ({ ...c, functions: c.functions?.map((f) => ({ ...f, timeout: 5_000 })) }));
    return t.type === 'loop' ? { ...t, functions: t.functions?.map((f) => ({ ...shorter(f), timeout: 5_000 })) } : t;
  };
  add(
    'same loop, every inner node with a shorter timeout (compiled: 2 host calls per timed node)',
    await timeIt(() => run(loop.map(shorter)), 1000, 3),
    nativeMs,
    'native JS',
  );

  // continueOnError: on the loop node (one guard around the loop), on the inner if (a guard per item: one host
  // call and one host→guest call each).
  const guardedLoop: PipelineNode[] = [loop[0]!, { ...(loop[1] as PipelineNode), continueOnError: true }, loop[2]!];
  const inner = loop[1] as LoopNode & { functions: PipelineNode[] };
  const guardedIfs: PipelineNode[] = [loop[0]!, { ...inner, functions: inner.functions.map((n) => ({ ...n, continueOnError: true })) }, loop[2]!];
  add('same loop, loop node with continueOnError (compiled)', await timeIt(() => run(guardedLoop), 1000, 3), nativeMs, 'native JS');
  add('same loop, each if with continueOnError (compiled: a guard per item)', await timeIt(() => run(guardedIfs), 1000, 3), nativeMs, 'native JS');

  // Host built-ins: a 1,000-item loop sending a notification per item (an awaited host request each, in one async
  // segment).
  const notifyLoop: PipelineNode[] = [
    {
      type: 'loop',
      range: { from: 1, to: 1000 },
      functions: [{ functionPackage: F('send-notification'), settings: { data: { title: 'item {{ currentItem }}' } } }],
    },
  ];
  add('1,000-item loop, a send-notification per item (compiled: awaited host requests)', await timeIt(() => run(notifyLoop), 1000, 3), undefined, '');

  // 100-node linear pipeline.
  const linear: PipelineNode[] = Array.from({ length: 100 }, (_, i) => ({ functionPackage: F('set'), settings: { [`v${i}`]: `{{ ${i} + 1 }}` } }));
  const linearMs = await timeIt(() => run(linear), 600, 10);
  add('100-node linear pipeline (set with a template each)', linearMs, undefined, '');

  // Runs per second of a small pipeline.
  const small: PipelineNode[] = [
    { functionPackage: F('set'), settings: { total: '{{ a + b }}' } },
    { type: 'if', conditions: [{ condition: 'total > 3', functions: [{ functionPackage: F('set'), settings: { big: true } }] }] },
    { functionPackage: F('return'), settings: { value: '{{ { total, big } }}' } },
  ];
  const smallMs = await timeIt(() => run(small, { a: 2, b: 3 }), 1500, 50);
  rows.push({
    measurement: 'small pipeline (set, if, return): runs per second',
    sandboxed: `${Math.round(1000 / smallMs)} runs/s`,
    baseline: '',
    ratio: '',
    target: '',
  });

  console.log(
    `\nPipeline engine (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at the end)\n`,
  );
  console.table(rows);
}, 300_000);
