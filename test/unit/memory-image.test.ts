import { afterAll, describe, expect, test } from 'vitest';
import type { RunOutcome, RunPipelineOptions } from '../../src/contract/pipeline.js';
import { runWith } from '../../src/pipeline/runner.js';
import { acquireModule, releaseModule, type SandboxModule } from '../../src/sandbox/pool.js';
import { captureImage } from '../../src/sandbox/memory-image.js';
import { readLayout } from '../../src/sandbox/wasm-layout.js';
import { retireModule, runIdleWork } from '../../src/sandbox/session.js';
import { cases, createFakeServices } from '../browser/pipeline-page/cases.mjs';

/**
 * Memory images (src/sandbox/memory-image.ts): after a run, the module's memory goes back to the primed sandbox saved
 * before the first run of that definition. These runs use one module, as the engine thread does for a repeated
 * action, and check that nothing of a run reaches the next one.
 */
const F = (name: string) => `com.client.function.${name}`;
const script = (code: string, mode?: string) => ({ functionPackage: F('script'), settings: { code, mode } });

const LEAKY = [
  script(
    [
      'const seen = { global: globalThis.leaked ?? null, proto: ({}).polluted ?? null, math: Math.max === Math.min };',
      'globalThis.leaked = (globalThis.leaked ?? 0) + 1;',
      'Object.prototype.polluted = "yes";',
      'Math.max = Math.min;',
      'context.out = { seen, random: [Math.random(), Math.random()] };',
      // The same definition misbehaving, on request: its sandbox is put back from the image all the same.
      'if (settings.mode === "hungry") context.big = new Array(1e5).fill(0).map((x, i) => ({ i, s: "x" + i }));',
      'if (settings.mode === "spin") for (;;) {}',
      'if (settings.mode === "throw") throw new Error("no");',
      'if (settings.mode === "wait") await new Promise(() => {});',
      'if (settings.mode === "host") await Client.DataSources.connect("people").find({});',
    ].join('\n'),
    '{{ mode }}',
  ),
  { functionPackage: F('return'), settings: { value: '{{ out }}' } },
];

let module: SandboxModule;
const modules: SandboxModule[] = [];

async function run(sandbox: SandboxModule, options: Partial<RunPipelineOptions>, idle = true): Promise<RunOutcome> {
  const { services } = createFakeServices();
  const outcome = await runWith(
    { environment: 'client', functions: [], payload: { mode: 'none' }, ...options, services: options.services ?? services } as RunPipelineOptions,
    {
      acquire: async () => {
        sandbox.inUse = true;
        return sandbox;
      },
      release: (m) => {
        m.inUse = false;
      },
    },
  );
  // The engine thread's idle moment: the run's session closes (its sandbox put back) and the next one is prepared.
  if (idle) runIdleWork();
  return outcome;
}

afterAll(() => {
  for (const m of modules) retireModule(m);
});

describe('memory images', () => {
  test('the packaged build has a layout: the break found by the probe, the heap above the saved data', async () => {
    module = await acquireModule(64 * 1024 * 1024);
    modules.push(module);
    const layout = module.layout;
    expect(layout).toBeDefined();
    const breakValue = new DataView(module.memory.buffer).getUint32(layout!.breakAt, true);
    expect(breakValue).toBeGreaterThan(layout!.heapStart);
    expect(layout!.breakAt).toBeLessThan(layout!.lowEnd);
    expect(layout!.lowEnd + 1024 * 1024).toBeLessThan(layout!.heapStart);
  });

  test('a restore puts back the JS side too: host references, cached handles and scopes made after the capture go', async () => {
    const m = await acquireModule(64 * 1024 * 1024);
    const runtime = m.quickjs.newRuntime();
    const ctx = runtime.newContext();
    const js = ctx as unknown as { _BigInt?: unknown; memory: { scope: { _disposables: { value: Set<unknown> } } } };
    const refs = (runtime as unknown as { hostRefs: { groups: Map<number, Map<number, unknown>> } }).hostRefs;
    const count = () => [...refs.groups.values()].reduce((n, g) => n + g.size, 0);
    const image = captureImage(m.memory, m.layout!, runtime, ctx)!;
    expect(image).toBeDefined();
    const refsBefore = count();
    const scopeBefore = js.memory.scope._disposables.value.size;
    for (let round = 0; round < 3; round++) {
      // A host function the guest keeps, and a BigInt (its constructor handle is cached on first use).
      ctx.newFunction('kept', () => ctx.undefined).consume((fn) => ctx.setProp(ctx.global, 'kept', fn));
      ctx.newBigInt(1n).dispose();
      expect(count()).toBe(refsBefore + 1);
      expect(js._BigInt).toBeDefined();
      image.restore();
      expect(count()).toBe(refsBefore);
      expect(js._BigInt).toBeUndefined();
      expect(js.memory.scope._disposables.value.size).toBe(scopeBefore);
      expect(ctx.unwrapResult(ctx.evalCode('typeof kept')).consume((h) => ctx.getString(h))).toBe('undefined');
    }
    ctx.dispose();
    runtime.dispose();
    retireModule(m);
  });

  test('a run sees nothing of the runs before it: globals, prototypes, built-ins and Math.random', async () => {
    const outcomes: RunOutcome[] = [];
    let imaged: unknown;
    for (let i = 0; i < 40; i++) {
      outcomes.push(await run(module, { functions: LEAKY }));
      if (i === 1) imaged = module.image?.spare;
      // From the second run on, the sandbox is the image's, put back: the same spare every time.
      if (i >= 1) expect(module.image?.spare).toBe(imaged);
      expect(module.spare).toBe(module.image?.spare);
    }
    expect(imaged).toBeDefined();
    const randoms = new Set<number>();
    for (const o of outcomes) {
      if (!o.ok) throw new Error(JSON.stringify(o.error));
      const result = o.result as { seen: unknown; random: number[] };
      expect(result.seen).toEqual({ global: null, proto: null, math: false });
      for (const r of result.random) randoms.add(r);
    }
    expect(randoms.size).toBe(80);
  });

  test('back to back, with no idle moment between runs, the second run saves the image and the next ones use it', async () => {
    const sandbox = await acquireModule(64 * 1024 * 1024);
    modules.push(sandbox);
    const results: unknown[] = [];
    const spares = new Set<unknown>();
    for (let i = 0; i < 6; i++) {
      const o = await run(sandbox, { functions: LEAKY }, false);
      if (!o.ok) throw new Error(JSON.stringify(o.error));
      results.push((o.result as { seen: unknown }).seen);
      if (i >= 2) spares.add(sandbox.image?.spare);
    }
    expect(results).toEqual(Array(6).fill({ global: null, proto: null, math: false }));
    // Saved when the second run opened; from the third on, every run took that same, put-back sandbox.
    expect(spares.size).toBe(1);
    expect([...spares][0]).toBeDefined();
  });

  test('the JS side does not grow: host references and scopes stay what the image saved', async () => {
    const count = () => {
      const spare = module.spare as unknown as { runtime: { hostRefs: { groups: Map<number, Map<number, unknown>> } } };
      return [...spare.runtime.hostRefs.groups.values()].reduce((n, g) => n + g.size, 0);
    };
    await run(module, { functions: LEAKY });
    const before = count();
    for (let i = 0; i < 20; i++) await run(module, { functions: LEAKY });
    expect(count()).toBe(before);
    // A host call that never answers: its promise's resolving functions (host references) stay in the guest when the
    // run times out; the image's references come back with the bytes, and the map does not keep the run's.
    const never = { dataSources: { connect: () => ({ find: () => new Promise(() => {}) }) }, notifications: { create: async () => ({}) } };
    for (let i = 0; i < 5; i++) {
      const o = await run(module, { functions: LEAKY, payload: { mode: 'host' }, services: never as never, limits: { runTimeoutMs: 100 } });
      expect(o.ok).toBe(false);
      expect(count()).toBe(before);
    }
    expect(module.image?.spare).toBe(module.spare);
  });

  test('failing, timed-out and memory-hungry runs leave the next run its clean sandbox', async () => {
    await run(module, { functions: LEAKY });
    const imaged = module.image?.spare;
    for (const mode of ['hungry', 'spin', 'throw', 'wait']) {
      // The spinning and waiting runs end at their time limit; the others have all the time a loaded machine needs.
      const runTimeoutMs = mode === 'spin' || mode === 'wait' ? 300 : 30_000;
      const bad = await run(module, { functions: LEAKY, payload: { mode }, limits: { runTimeoutMs } });
      expect(bad.ok, mode).toBe(mode === 'hungry');
      const next = await run(module, { functions: LEAKY });
      expect(module.broken, mode).toBe(false);
      expect(module.image?.spare, mode).toBe(imaged);
      if (!next.ok) throw new Error(`${mode}: ${JSON.stringify(next.error)}`);
      expect((next.result as { seen: unknown }).seen, mode).toEqual({ global: null, proto: null, math: false });
    }
    // The hungry run grew the memory; the image put back the heap of before it.
    expect(module.memory.buffer.byteLength).toBeGreaterThan(16 * 1024 * 1024);
  });

  test('every shared case gives its answer on modules whose sandbox is put back between runs, in any order', async () => {
    // The engine's pool, as runPipeline uses it: a module that broke or reached its memory cap is dropped.
    const used = new Set<SandboxModule>();
    let taken: { module: SandboxModule; imaged: unknown } | undefined;
    const acquire = async (bytes: number) => {
      const m = await acquireModule(bytes);
      used.add(m);
      modules.push(m);
      taken = { module: m, imaged: m.image?.spare };
      return m;
    };
    const skip = /OUT_OF_MEMORY|out-of-memory|STACK_OVERFLOW|recursion/i;
    const list = cases.filter((c) => !skip.test(c.name));
    let restored = 0;
    // Each case twice in a row (the second from the image of the first), then the list again in reverse.
    for (const c of [...list.flatMap((c) => [c, c]), ...[...list].reverse()]) {
      const { services, calls } = createFakeServices();
      const outcome = await runWith({ environment: 'client', ...c.options, services }, { acquire, release: releaseModule });
      runIdleWork();
      try {
        c.check(outcome, calls);
      } catch (error) {
        throw new Error(`${c.name}: ${(error as Error).message}`);
      }
      if (taken?.imaged && taken.module.image?.spare === taken.imaged) restored++;
    }
    // Most second runs (in practice all but a few) are put back from their image (not those that exhaust memory or time out while priming).
    expect(restored).toBeGreaterThan(list.length * 0.5);
    // Nothing wrote between the saved data and the stack a run can use: the bss fits, the stack stays up.
    for (const m of used) {
      const layout = m.layout!;
      const gap = new Uint8Array(m.memory.buffer, layout.lowEnd, layout.heapStart - 1024 * 1024 - layout.lowEnd);
      expect(gap.findIndex((b) => b !== 0)).toBe(-1);
    }
  });
});

describe('wasm layout', () => {
  test('reads the packaged build, and gives up on malformed or hostile bytes without throwing', async () => {
    const { readFile } = await import('node:fs/promises');
    const { createRequire } = await import('node:module');
    const bytes = new Uint8Array(await readFile(createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm')));
    const layout = readLayout(bytes)!;
    expect(layout.stackTop).toBeGreaterThan(layout.dataEnd);
    expect(layout.dataEnd).toBeGreaterThan(1024);
    const junk = [
      new Uint8Array(0),
      new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]),
      bytes.slice(0, bytes.length >> 1),
      bytes.slice(0, 64),
      // A section whose size is a run of continuation bytes, and one that says it is longer than the file.
      new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 11, ...Array(4096).fill(0xff)]),
      new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 6, 0xff, 0xff, 0xff, 0xff, 0x0f, 1]),
      Uint8Array.from({ length: 10_000 }, (_, i) => (i * 7919) & 0xff),
    ];
    for (const j of junk) expect(() => readLayout(j)).not.toThrow();
    for (const j of junk) expect(readLayout(j)).toBeUndefined();
  });
});
