import debugVariant from '@jitl/quickjs-wasmfile-debug-sync';
import { newQuickJSWASMModuleFromVariant, TestQuickJSWASMModule } from 'quickjs-emscripten-core';
import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import { runWith } from '../../src/pipeline/runner.js';
import { acquireModule, releaseModule } from '../../src/sandbox/pool.js';
import { openSession } from '../../src/sandbox/session.js';
import { cases, createFakeServices } from '../browser/pipeline-page/cases.mjs';

/**
 * No leak: every runtime was disposed, and disposing succeeded (QuickJS aborts
 * the dispose of a runtime that still has a live object, which marks the module
 * broken), and the debug build's leak check is clean.
 */
function expectNothingAlive(quickjs: TestQuickJSWASMModule, sandbox: { broken: boolean }) {
  expect(sandbox.broken).toBe(false);
  expect(quickjs.getFFI().QTS_RecoverableLeakCheck()).toBe(0);
  expect([...quickjs.runtimes].filter((rt) => rt.alive)).toHaveLength(0);
  expect([...quickjs.runtimes].length).toBeGreaterThan(0);
}

async function debugModule() {
  const quickjs = new TestQuickJSWASMModule(await newQuickJSWASMModuleFromVariant(debugVariant));
  const memory = quickjs.getWasmMemory();
  return { quickjs, sandbox: { quickjs: quickjs as never, memory, maxBytes: 2 ** 31, broken: false } };
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

  test('a run cannot see what an earlier run left behind', async () => {
    const services = createFakeServices().services;
    const script = (code: string) => [{ functionPackage: 'com.client.function.script', settings: { code } }];
    const a = await runPipeline({
      environment: 'client',
      services,
      functions: script('globalThis.leak = 1; Object.prototype.polluted = 2; context.kept = 3; return 1'),
    });
    expect(a.ok).toBe(true);
    const b = await runPipeline({
      environment: 'client',
      services,
      functions: script('return [typeof leak, ({}).polluted === undefined, typeof context.kept]'),
    });
    expect(b.ok && b.result).toEqual(['undefined', true, 'undefined']);
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
    session.number('prep', session.number('spec', JSON.stringify({ k: 'o', n: [], v: [] })));
    await session.settle('call', index, 0);
    expect(bridged).toBe(1);
    session.close();
    expect(session.closed).toBe(true);
    expect(() => session.number('test', 0)).toThrow(/ended/);
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
