import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import type { InPageCode, InPageFunction, PipelineNode, RunOutcome } from '../../src/contract/pipeline.js';
// The shared cases (Node: test/unit/pipeline-cases.test.ts; Chromium: test/browser/pipeline.test.ts), here in page mode.
import { cases, createFakeServices } from '../browser/pipeline-page/cases.mjs';

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => InPageFunction;

/** Page mode as a host builds it: each script and custom function compiled as a function of this realm (here with `new Function`; the debug page injects scripts). */
function pageCode(made: string[] = []): InPageCode {
  return {
    script(path, code) {
      made.push(`script ${path}`);
      return new AsyncFunction('settings', 'context', 'Client', 'currentItem', 'currentIndex', code);
    },
    custom(pkg, code) {
      made.push(`custom ${pkg}`);
      // The function sees the run's bridged Client as a global `Client` would be in the sandbox.
      const factory = new Function('Client', `return (${code}\n)`) as (client: unknown) => InPageFunction;
      return (settings, context, client, item, index) => factory(client)(settings, context, client, item, index);
    },
  };
}

/**
 * Cases whose point is the sandbox itself, which page mode gives up (docs/pipeline.md, "Debug in page"): a
 * synchronous endless loop would hang this thread, memory and stack are the host's, and `console` is the page's.
 */
const SANDBOX_ONLY = new Set([
  'per-node timeout with continueOnError: the run goes on',
  'infinite loop → TIMEOUT',
  'a caught interrupt cannot keep the run alive',
  'infinite microtask chain → TIMEOUT',
  'a guest promise that can never settle fails at once',
  'memory bomb of many small strings → OUT_OF_MEMORY',
  'one huge allocation → OUT_OF_MEMORY',
  'deep recursion → clean STACK_OVERFLOW error',
  'console.log inside scripts goes into the trace',
  'user code that can never settle or spins past its timeout fails only its node under continueOnError',
]);

const usesCode = (nodes: PipelineNode[] | undefined): boolean =>
  (nodes ?? []).some((n) =>
    n.type === 'loop'
      ? usesCode(n.functions)
      : n.type === 'if'
        ? n.conditions.some((c) => usesCode(c.functions)) || usesCode(n.elseFunctions)
        : n.functionPackage === 'com.client.function.script' || !n.functionPackage.startsWith('com.client.') || usesCode(n.functions),
  );

describe('pipeline cases in page mode (debug in page): same outcomes as in the sandbox', () => {
  const chosen = cases.filter((c) => !SANDBOX_ONLY.has(c.name) && usesCode(c.options.functions as PipelineNode[]));
  test('the shared cases include script and custom function cases to compare', () => {
    expect(chosen.length).toBeGreaterThanOrEqual(10);
  });
  for (const c of chosen) {
    test(c.name, async () => {
      const { services, calls } = createFakeServices();
      const made: string[] = [];
      const outcome = await runPipeline({ environment: 'client', ...c.options, services, inPage: pageCode(made) } as never);
      c.check(outcome, calls);
      // The code ran as functions of this realm, not in QuickJS (cases refused before anything runs aside).
      if (outcome.trace.length) expect(made.length).toBeGreaterThan(0);
    });
  }
});

describe('page mode', () => {
  const { services } = createFakeServices();
  const run = (functions: PipelineNode[], extra: Record<string, unknown> = {}, made?: string[]): Promise<RunOutcome> =>
    runPipeline({ environment: 'client', functions, services, inPage: pageCode(made), ...extra });

  test('context changes made by a page function are seen by later templates, conditions and loops; deleted keys are gone', async () => {
    const made: string[] = [];
    const outcome = await run(
      [
        { functionPackage: 'com.client.function.set', settings: { gone: 1, list: [1, 2] } },
        {
          functionPackage: 'com.client.function.script',
          settings: { code: 'context.list.push(3); delete context.gone; context.seen = typeof settings.code; return { k: 1 }' },
        },
        {
          type: 'loop',
          items: 'list',
          functions: [{ functionPackage: 'com.acme.function.add', settings: { v: '{{ currentItem }}' } }],
        },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ [sum, k, seen, typeof gone, list.length] }}' } },
      ],
      {
        customFunctions: [
          {
            package: 'com.acme.function.add',
            code: '(settings, context) => ({ sum: (context.sum ?? 0) + settings.v + (typeof currentIndex === "undefined" ? 0 : 100) })',
          },
        ],
      },
      made,
    );
    expect(outcome.ok ? outcome.result : outcome.error).toEqual([6, 1, 'string', 'undefined', 3]);
    // Compiled once per node run here (the debug page compiles each once per page).
    expect(made).toEqual(['script functions[1]', 'custom com.acme.function.add', 'custom com.acme.function.add', 'custom com.acme.function.add']);
  });

  test('script nodes get currentItem and currentIndex of the innermost loop, and the bridged Client', async () => {
    const outcome = await run(
      [
        {
          type: 'loop',
          items: 'people',
          functions: [
            {
              functionPackage: 'com.client.function.script',
              settings: {
                code: 'const rows = await Client.DataSources.connect(1).find(); context.out = [...(context.out ?? []), currentIndex + ":" + currentItem + ":" + rows.length]',
              },
            },
          ],
        },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ out }}' } },
      ],
      { payload: { people: ['a', 'b'] } },
    );
    expect(outcome.ok ? outcome.result : outcome.error).toEqual(['0:a:2', '1:b:2']);
  });

  test('a node whose page function is missing fails naming it; a non-JSON result fails the node', async () => {
    const missing = await runPipeline({
      environment: 'client',
      functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'return 1' } }],
      services,
      inPage: { script: () => undefined, custom: () => undefined },
    });
    expect(missing.ok ? missing.result : [missing.error.code, missing.error.errorMessage]).toEqual([
      'FUNCTION_FAILED',
      'Debug in page: the script node functions[0] is not loaded on this page',
    ]);
    const cyclic = await run([{ functionPackage: 'com.client.function.script', settings: { code: 'const a = {}; a.a = a; return a' } }]);
    expect(cyclic.ok ? cyclic.result : [cyclic.error.code, cyclic.error.errorType]).toEqual(['FUNCTION_FAILED', 'TypeError']);
  });

  test('trace entries carry the same input and output as in the sandbox', async () => {
    const functions: PipelineNode[] = [
      {
        type: 'loop',
        items: 'list',
        functions: [
          {
            functionPackage: 'com.client.function.script',
            settings: { code: 'return { seen: currentItem, big: "x".repeat(settings.n) }', n: '{{ currentItem * 3000 }}' },
          },
          { functionPackage: 'com.acme.function.none', settings: { k: '{{ currentIndex }}' } },
        ],
      },
    ];
    const options = {
      environment: 'client' as const,
      functions,
      payload: { list: [1, 2] },
      services,
      customFunctions: [{ package: 'com.acme.function.none', code: '(settings) => undefined' }],
    };
    const strip = (o: RunOutcome) => o.trace.map(({ durationMs: _d, startMs: _s, ...rest }) => rest);
    const sandboxed = await runPipeline(options);
    const inPage = await runPipeline({ ...options, inPage: pageCode() });
    expect(sandboxed.ok && inPage.ok).toBe(true);
    expect(strip(inPage)).toEqual(strip(sandboxed));
    // Values were traced (one of them over the cap: a truncated value).
    expect(strip(inPage).map((e) => 'output' in e)).toEqual([true, false, true, false, true]);
    expect(JSON.stringify(strip(inPage))).toContain('"$truncated":true');
  });
});
