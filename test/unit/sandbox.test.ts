import debugVariant from '@jitl/quickjs-wasmfile-debug-sync';
import { newQuickJSWASMModuleFromVariant, TestQuickJSWASMModule } from 'quickjs-emscripten-core';
import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import { runWith } from '../../src/pipeline/runner.js';
import { acquireModule, releaseModule, type SandboxModule } from '../../src/sandbox/pool.js';
import { openSession, retireModule } from '../../src/sandbox/session.js';
import { cases, createFakeServices } from '../browser/pipeline-page/cases.mjs';

/**
 * No leak: every runtime was disposed, and disposing succeeded (QuickJS aborts
 * the dispose of a runtime that still has a live object, which marks the module
 * broken), and the debug build's leak check is clean.
 */
function expectNothingAlive(quickjs: TestQuickJSWASMModule, sandbox: SandboxModule) {
  // The last run's session is closed when the thread is idle, and a spare sandbox may be prepared: retired here.
  retireModule(sandbox);
  expect(sandbox.broken).toBe(false);
  expect(quickjs.getFFI().QTS_RecoverableLeakCheck()).toBe(0);
  expect([...quickjs.runtimes].filter((rt) => rt.alive)).toHaveLength(0);
  expect([...quickjs.runtimes].length).toBeGreaterThan(0);
}

async function debugModule() {
  const quickjs = new TestQuickJSWASMModule(await newQuickJSWASMModuleFromVariant(debugVariant));
  const memory = quickjs.getWasmMemory();
  return { quickjs, sandbox: { quickjs: quickjs as never, memory, maxBytes: 2 ** 31, broken: false } as SandboxModule };
}

describe('sandbox', () => {
  test('runs leave no runtime, context or handle alive (debug build)', async () => {
    const { quickjs, sandbox } = await debugModule();
    // Every case that does not exhaust memory or the host stack, including failures, timeouts and never-settling promises.
    const skip = /OUT_OF_MEMORY|out-of-memory|STACK_OVERFLOW|recursion|infinite|caught interrupt|run deadline/i;
    let runs = 0;
    for (const c of cases) {
      if (skip.test(c.name)) continue;
      const { services, calls } = createFakeServices();
      const outcome = await runWith({ environment: 'client', ...c.options, services }, { acquire: async () => sandbox, release: () => {} });
      c.check(outcome, calls);
      expect(sandbox.broken).toBe(false);
      runs++;
    }
    expect(runs).toBeGreaterThan(30);
    expectNothingAlive(quickjs, sandbox);
  }, 120_000);

  test('a run-level timeout with host calls in flight also leaves nothing alive (debug build)', async () => {
    const { quickjs, sandbox } = await debugModule();
    const { services } = createFakeServices();
    const outcome = await runWith(
      {
        environment: 'client',
        services,
        limits: { runTimeoutMs: 1500 },
        functions: [
          {
            functionPackage: 'com.client.function.script',
            settings: { code: 'Client.DataSources.connect("hang").find(); await Client.DataSources.connect("hang").find()' },
          },
        ],
      },
      { acquire: async () => sandbox, release: () => {} },
    );
    expect(outcome.ok === false && outcome.error.code).toBe('TIMEOUT');
    expectNothingAlive(quickjs, sandbox);
  });

  test('modules are reused between runs, and dropped after an out-of-memory', async () => {
    const bytes = 40 * 1024 * 1024;
    const first = await acquireModule(bytes);
    releaseModule(first);
    const again = await acquireModule(bytes);
    expect(again).toBe(first);
    releaseModule(again);

    const services = createFakeServices().services;
    const bomb = await runPipeline({
      environment: 'client',
      services,
      limits: { memoryBytes: bytes },
      functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'const a = []; for (;;) a.push({ i: a.length })' } }],
    });
    expect(bomb.ok === false && bomb.error.code).toBe('OUT_OF_MEMORY');
    const next = await acquireModule(bytes);
    expect(next).not.toBe(first);
    expect(next.memory.buffer.byteLength).toBeLessThan(bytes * 0.85);
    releaseModule(next);
  });

  test('a run cannot see what an earlier run left behind, in the next sandbox or in one prepared while idle', async () => {
    const services = createFakeServices().services;
    const script = (code: string) => [{ functionPackage: 'com.client.function.script', settings: { code } }];
    const pollute = () =>
      runPipeline({
        environment: 'client',
        services,
        functions: script('globalThis.leak = 1; Object.prototype.polluted = 2; JSON.parse = () => 9; context.kept = 3; return 1'),
      });
    const look = () =>
      runPipeline({
        environment: 'client',
        services,
        functions: [
          { functionPackage: 'com.client.function.set', settings: { x: '{{ typeof leak }}' } },
          ...script('return [context.x, ({}).polluted === undefined, JSON.parse("[1]")[0], typeof context.kept]'),
        ],
      });
    const idle = () => new Promise((resolve) => setTimeout(resolve, 5));
    // Right after: the next run closes the last session first and opens a new one.
    expect((await pollute()).ok).toBe(true);
    const next = await look();
    expect(next.ok && next.result).toEqual(['undefined', true, 1, 'undefined']);
    // After an idle moment: the last session was closed then and a spare sandbox prepared, which the next run takes.
    expect((await pollute()).ok).toBe(true);
    await idle();
    const pooled = await acquireModule(128 * 1024 * 1024);
    expect(pooled.closing).toBeUndefined();
    expect(pooled.spare).toBeDefined();
    releaseModule(pooled);
    const after = await look();
    expect(after.ok && after.result).toEqual(['undefined', true, 1, 'undefined']);
  });

  test('a sandbox primed while idle for the definition run last starts as a fresh one: the run’s own context, nothing of the run before', async () => {
    const services = createFakeServices().services;
    const functions = [
      { functionPackage: 'com.client.function.set', settings: { seen: '{{ [typeof leak, typeof ({}).polluted, typeof context.kept, typeof first, n] }}' } },
      {
        functionPackage: 'com.client.function.script',
        settings: {
          code: 'if (context.first) { globalThis.leak = 1; Object.prototype.polluted = 2; JSON.parse = () => 9; context.kept = 3 } return context.seen',
        },
      },
    ];
    const run = (payload: Record<string, unknown>) => runPipeline({ environment: 'client', services, functions, payload });
    const idle = () => new Promise((resolve) => setTimeout(resolve, 5));
    const first = await run({ first: true, n: 1 });
    expect(first.ok && first.result).toEqual(['undefined', 'undefined', 'undefined', 'boolean', 1]);
    await idle();
    const pooled = await acquireModule(128 * 1024 * 1024);
    expect(pooled.spare?.primed).toBeDefined();
    releaseModule(pooled);
    // The primed sandbox: its expressions and program were compiled ahead, the payload added at the run.
    const second = await run({ n: 2, '0': 'zero' });
    expect(second.ok && second.result).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 2]);
    await idle();
    // A different definition drops the primed sandbox and runs in a new one.
    const other = await runPipeline({ environment: 'client', services, functions: [functions[0]!], payload: { n: 3 } });
    expect(other.ok && other.result).toEqual({ seen: ['undefined', 'undefined', 'undefined', 'undefined', 3] });
  });

  test('a definition whose compiling takes longer than priming may is not primed: its runs open as before', async () => {
    const services = createFakeServices().services;
    // Closes its guest function early: the rest runs when the expression is compiled (200 ms), before the run begins.
    const slow = '1)}, (function(){ for (var t = Date.now(); Date.now() - t < 200;) {} })(), function(){return(1';
    const functions = [
      { functionPackage: 'com.client.function.set', settings: { x: `{{ ${slow} }}` } },
      { functionPackage: 'com.client.function.return', settings: { value: '{{ n }}' } },
    ];
    const run = (n: number) => runPipeline({ environment: 'client', services, functions, payload: { n } });
    const first = await run(1);
    expect(first.ok && first.result).toBe(1);
    // The idle work tries to prime a spare for it, gives up at its own deadline (50 ms), and leaves a plain one.
    await new Promise((resolve) => setTimeout(resolve, 150));
    const pooled = await acquireModule(128 * 1024 * 1024);
    expect(pooled.spare).toBeDefined();
    expect(pooled.spare?.primed).toBeUndefined();
    releaseModule(pooled);
    const second = await run(2);
    expect(second.ok && second.result).toBe(2);
  });

  // A guest can make the engine's report helper spin (patched built-ins it serializes with): the grace bounds that
  // read. The clock is the session's own and moves 1 ms per read, so the bound is counted, not timed.
  test("a report's grace: a failure's in full, a read on a run's way on the node's time, after a cancel 20 ms", async () => {
    const cases = [
      { name: 'deadline passed', deadlineIn: -5, abort: false, onTime: true, spent: [250, 255] },
      { name: "a failure's report, deadline 30 ms ahead", deadlineIn: 30, abort: false, onTime: false, spent: [250, 255] },
      { name: 'on time, deadline 30 ms ahead', deadlineIn: 30, abort: false, onTime: true, spent: [30, 35] },
      { name: 'on time, deadline far ahead', deadlineIn: 10_000, abort: false, onTime: true, spent: [250, 255] },
      { name: 'cancelled', deadlineIn: 10_000, abort: true, onTime: false, spent: [20, 25] },
    ];
    for (const c of cases) {
      const module = await acquireModule(64 * 1024 * 1024);
      let clock = 1_000;
      const controller = new AbortController();
      const session = openSession({
        module,
        now: () => clock++,
        runDeadline: clock + 100_000,
        memoryBytes: 48 * 1024 * 1024,
        signal: controller.signal,
        program: 'api.run=function(){for(;;){}};',
      });
      try {
        session.setDeadline(clock + c.deadlineIn);
        if (c.abort) controller.abort();
        const start = clock;
        expect(() => session.grace(250, () => session.string('run'), c.onTime)).toThrow();
        expect({ name: c.name, spent: clock - start }).toEqual({ name: c.name, spent: expect.toSatisfy((n: number) => n >= c.spent[0]! && n <= c.spent[1]!) });
      } finally {
        session.close();
        releaseModule(module);
      }
    }
  });

  test('bridge calls are refused once the session has ended', async () => {
    const module = await acquireModule(64 * 1024 * 1024);
    let bridged = 0;
    const session = openSession({
      module,
      runDeadline: performance.now() + 5000,
      memoryBytes: 48 * 1024 * 1024,
      bridge: async () => ++bridged,
    });
    session.installCode();
    const index = session.number('custom', 'async () => { await Client.DataSources.connect(1).find(); return { n: 1 } }');
    await session.settle('call', index, 0);
    expect(bridged).toBe(1);
    session.close();
    expect(session.closed).toBe(true);
    expect(() => session.number('fn', '1')).toThrow(/ended/);
    releaseModule(module);
  });

  // A busy guest blocks the host's event loop, so cancellation lands at the next await (a busy loop runs to its deadline).
  test('an aborted signal cancels a run waiting on the host with ABORTED', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const outcome = await runPipeline({
      environment: 'client',
      services: createFakeServices().services,
      signal: controller.signal,
      functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'await Client.DataSources.connect("hang").find()' } }],
    });
    expect(outcome.ok === false && outcome.error.code).toBe('ABORTED');
    expect(outcome.durationMs).toBeLessThan(5000);
  });
});
