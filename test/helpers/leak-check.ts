import debugVariant from '@jitl/quickjs-wasmfile-debug-sync';
import { newQuickJSWASMModuleFromVariant, TestQuickJSWASMModule } from 'quickjs-emscripten-core';
import { expect } from 'vitest';
import type { PipelineNode, RunPipelineOptions } from '../../src/contract/pipeline.js';
import { runWith } from '../../src/pipeline/runner.js';
import type { SandboxModule } from '../../src/sandbox/pool.js';
import { retireModule } from '../../src/sandbox/session.js';

/**
 * Runs each pipeline (with `options`) on one sandbox module of QuickJS's debug build, then retires the module and
 * checks that nothing leaked: no handle alive (QTS_RecoverableLeakCheck), no runtime alive, the module not broken.
 * Each run must have traced something (so it really ran).
 */
export async function expectNoLeaks(pipelines: PipelineNode[][], options: Omit<RunPipelineOptions, 'functions'>): Promise<void> {
  const quickjs = new TestQuickJSWASMModule(await newQuickJSWASMModuleFromVariant(debugVariant));
  const sandbox = { quickjs: quickjs as never, memory: quickjs.getWasmMemory(), maxBytes: 2 ** 31, broken: false } as SandboxModule;
  for (const functions of pipelines) {
    const outcome = await runWith({ ...options, functions }, { acquire: async () => sandbox, release: () => {} });
    expect(outcome.trace.length).toBeGreaterThan(0);
    expect(sandbox.broken).toBe(false);
  }
  // The last run's session is closed when the thread is idle, and a spare sandbox may be prepared: retired here.
  retireModule(sandbox);
  expect(sandbox.broken).toBe(false);
  expect(quickjs.getFFI().QTS_RecoverableLeakCheck()).toBe(0);
  expect([...quickjs.runtimes].filter((rt) => rt.alive)).toHaveLength(0);
}
