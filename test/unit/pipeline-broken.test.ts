import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import { withoutTimes } from '../helpers/pipeline-outcome.js';
import { createFakeServices } from '../browser/pipeline-page/cases.mjs';
import type { InPageCode, PipelineNode, RunOutcome, RunPipelineOptions } from '../../src/contract/pipeline.js';

/**
 * Expressions that do not compile (src/pipeline/inline.ts `BrokenExpression`): the node that uses one is compiled
 * as a node that fails with the compiler's error (`EXPRESSION_FAILED`, its type and message) where the run reaches
 * it. Each pipeline's outcome and host calls must equal the recorded ones (the snapshots: what the host walker,
 * which ran such nodes until it was deleted, gave).
 */
type Options = Omit<RunPipelineOptions, 'services' | 'environment'>;
async function compare(options: Options) {
  const compiled = createFakeServices();
  const outcome = await runPipeline({ environment: 'client', customFunctions, ...options, services: compiled.services });
  expect(withoutTimes(outcome)).toMatchSnapshot();
  expect(compiled.calls).toMatchSnapshot();
  return { outcome, calls: compiled.calls as unknown[][] };
}

const F = (name: string) => `com.client.function.${name}`;
const set = (settings: Record<string, unknown>, extra: Partial<PipelineNode> = {}): PipelineNode =>
  ({ functionPackage: F('set'), settings, ...extra }) as PipelineNode;
const ret = (value: unknown): PipelineNode => ({ functionPackage: F('return'), settings: { value } });
const customFunctions = [{ package: 'com.acme.function.echo', code: '(settings) => ({ echoed: settings })' }];
const result = (o: RunOutcome) => (o.ok ? o.result : [o.error.code, o.error.errorType, o.error.errorMessage]);
const outcomes = (o: RunOutcome) => o.trace.map((t) => [t.path, t.outcome, t.iteration, t.retries]);

describe('an expression that does not compile fails its node when the run reaches it', () => {
  test('in a function node: before any of its settings run, also when the node is gated off', async () => {
    const plain = await compare({ functions: [set({ a: 1 }), set({ b: '{{ 1 + }}' }), ret('unreachable')] });
    expect(result(plain.outcome)).toEqual(['EXPRESSION_FAILED', 'SyntaxError', expect.stringContaining('Invalid expression "1 +": ')]);
    expect(outcomes(plain.outcome)).toEqual([
      ['functions[0]', 'ok', undefined, undefined],
      ['functions[1]', 'failed', undefined, undefined],
    ]);
    // The first of its settings has an effect: it never runs (the node compiles all its settings before it runs any).
    const first = await compare({
      payload: { n: 0 },
      functions: [
        set({ a: '{{ context.n = 1 }}', b: '{{ ) }}', c: '{{ ( }}' }, { continueOnError: true }),
        { functionPackage: F('if'), settings: { condition: '{{ false }}', x: '{{ [ }}' }, continueOnError: true },
        ret('{{ [n, lastError.errorMessage, lastError.path] }}'),
      ],
    });
    expect(first.outcome.ok && first.outcome.result).toEqual([0, expect.stringContaining('Invalid expression "[": '), 'functions[1]']);
  });

  test('in an if node: only when its condition is tested', async () => {
    const { outcome } = await compare({
      payload: { k: 1 },
      functions: [
        {
          type: 'if',
          conditions: [
            { condition: 'k === 1', functions: [set({ first: true })] },
            { condition: 'k ===', functions: [] },
          ],
        },
        {
          type: 'if',
          conditions: [
            { condition: 'k === 2', functions: [] },
            { condition: 'k ===', functions: [] },
          ],
          elseFunctions: [set({ no: 1 })],
        },
        ret('unreachable'),
      ],
    });
    expect(result(outcome)).toEqual(['EXPRESSION_FAILED', 'SyntaxError', expect.stringContaining('conditions[1].condition: Invalid expression "k ===": ')]);
    expect(outcomes(outcome).map((o) => o.slice(0, 2))).toEqual([
      ['functions[0].conditions[0].functions[0]', 'ok'],
      ['functions[0]', 'ok'],
      ['functions[1]', 'failed'],
    ]);
  });

  test('in a loop: items, range bounds (the `from` one runs first), and in an iteration', async () => {
    const loops: [PipelineNode, number][] = [
      [{ type: 'loop', items: '{{ [1, }}', functions: [] }, 0],
      [{ type: 'loop', range: { from: '{{ context.from = 1 }}', to: '{{ ] }}' }, functions: [] }, 1],
      [{ type: 'loop', range: { from: '{{ * }}', to: 3 }, functions: [] }, 0],
    ];
    for (const [loop, from] of loops) {
      const { outcome } = await compare({
        payload: { from: 0 },
        functions: [{ ...loop, continueOnError: true }, ret('{{ [from, lastError.code, lastError.errorType] }}')],
      });
      expect(outcome.ok && outcome.result).toEqual([from, 'EXPRESSION_FAILED', 'SyntaxError']);
    }
    const { outcome } = await compare({
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 3 },
          functions: [
            set({ i: '{{ currentIndex }}' }),
            {
              type: 'if',
              conditions: [{ condition: 'currentIndex < 2', functions: [set({ ok: true })] }],
              elseFunctions: [set({ bad: '{{ currentIndex + }}' })],
            },
          ],
        },
      ],
    });
    expect(result(outcome)).toEqual(['EXPRESSION_FAILED', 'SyntaxError', expect.stringContaining('Invalid expression "currentIndex +"')]);
    expect(outcomes(outcome).slice(-3)).toEqual([
      ['functions[0].functions[1].elseFunctions[0]', 'failed', 2, undefined],
      ['functions[0].functions[1]', 'failed', 2, undefined],
      ['functions[0]', 'failed', undefined, undefined],
    ]);
  });

  test('under retry, continueOnError and timeout: each attempt fails the same way', async () => {
    const { outcome } = await compare({
      functions: [
        set({ x: '{{ % }}' }, { retry: { attempts: 3 }, continueOnError: true, timeout: 5000 }),
        set({ y: '{{ % }}' }, { retry: { attempts: 2, delayMs: 5 }, continueOnError: true }),
        { type: 'loop', range: { from: 0, to: 1 }, timeout: 5000, continueOnError: true, functions: [set({ z: '{{ % }}' })] },
        ret('{{ lastError.path }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toBe('functions[2]');
    expect(outcomes(outcome)).toEqual([
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'failed', undefined, 2],
      ['functions[1]', 'retried', undefined, undefined],
      ['functions[1]', 'failed', undefined, 1],
      ['functions[2].functions[0]', 'failed', 0, undefined],
      ['functions[2]', 'failed', undefined, undefined],
      ['functions[3]', 'ok', undefined, undefined],
    ]);
  });

  test('in the settings of a host built-in, a script node or a custom function: the host is never asked', async () => {
    const { outcome, calls } = await compare({
      functions: [
        { functionPackage: F('read-datasource'), settings: { dataSourceId: '{{ 1 + }}' }, continueOnError: true },
        { functionPackage: F('script'), settings: { code: 'context.ran = true', x: '{{ ( }}' }, continueOnError: true },
        { functionPackage: 'com.acme.function.echo', settings: { x: '{{ ( }}' }, continueOnError: true },
        { functionPackage: F('read-datasource'), settings: { dataSourceId: 1 } },
        ret('{{ [typeof ran, typeof echoed, records.length] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual(['undefined', 'undefined', 2]);
    expect(calls.map((c) => c[0])).toEqual(['dataSources.find']);
  });

  test('in page mode, beside a built-in (an async program), with a short trace, in nested loops', async () => {
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<unknown>;
    const inPage: InPageCode = {
      script: (_path, code) => new AsyncFunction('settings', 'context', 'Client', 'currentItem', 'currentIndex', code),
      custom: (_pkg, code) => {
        const made = new Function(`return (${code})`)() as (settings: unknown, context: unknown) => unknown;
        return (settings, context) => made(settings, context);
      },
    };
    const nested: PipelineNode = {
      type: 'loop',
      range: { from: 0, to: 2 },
      functions: [
        {
          type: 'loop',
          items: '{{ [currentIndex, currentIndex + 1] }}',
          functions: [
            { functionPackage: F('read-datasource'), settings: { dataSourceId: 1, limit: '{{ currentItem + 1 }}' } },
            { functionPackage: F('script'), settings: { code: 'return { seen: (context.seen || 0) + 1 }' } },
            { type: 'if', conditions: [{ condition: 'seen < 5', functions: [] }], elseFunctions: [set({ late: '{{ seen + }}' })] },
          ],
        },
      ],
    };
    for (const extra of [{}, { inPage }, { limits: { maxTraceEntries: 3 } }] as Partial<Options>[]) {
      const { outcome, calls } = await compare({ ...extra, functions: [nested, ret('unreachable')] });
      expect(result(outcome)).toEqual(['EXPRESSION_FAILED', 'SyntaxError', expect.stringContaining('Invalid expression "seen +"')]);
      expect(calls.length).toBe(5);
    }
  });
});
