import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import { expectNoLeaks } from '../helpers/leak-check.js';
import { collectExpressions, planPipeline } from '../../src/pipeline/inline.js';
import type { HostServices, PipelineNode, RunOutcome, RunPipelineOptions, TraceEntry } from '../../src/contract/pipeline.js';

/**
 * Expression-only nodes (if/set/return/log, if and loop nodes) run inside the guest in one call
 * (src/pipeline/inline.ts). Each pipeline here runs as written and (`both`) with a generous
 * `timeout` on every node (compiled as well); each must give the recorded result, error and trace
 * (durations aside): the snapshot of what the host walker, the engine's former second path and
 * its oracle until it was deleted, gave.
 */
const services: HostServices = {
  dataSources: { connect: () => ({}) as never },
  notifications: { create: async () => ({}) },
};
const F = (name: string) => `com.client.function.${name}`;

function timed(nodes: PipelineNode[] | undefined): PipelineNode[] | undefined {
  return nodes?.map((node) => {
    if (node.type === 'loop') return { ...node, timeout: 100_000, functions: timed(node.functions) };
    if (node.type === 'if')
      return {
        ...node,
        timeout: 100_000,
        conditions: node.conditions.map((c) => ({ ...c, functions: timed(c.functions) })),
        elseFunctions: timed(node.elseFunctions),
      };
    return { ...node, timeout: 100_000, functions: timed(node.functions) };
  });
}

/** Times aside (each entry of a node run starts at some ms since the run began); input, output and retries compared. */
const untimed = (t: TraceEntry) => {
  if (t.package !== 'trace' && !t.message?.includes('not listed one by one')) expect(t.startMs).toBeGreaterThanOrEqual(0);
  return { ...t, durationMs: 0, startMs: 0 };
};
const strip = (o: RunOutcome) => ({
  ...o,
  durationMs: 0,
  trace: o.trace.map(untimed),
  ...(o.ok ? {} : { error: { ...o.error, trace: o.error.trace.map(untimed) } }),
});

/**
 * The run against its recorded outcome (the snapshot: what the host walker, the engine's former second path and
 * the oracle until it was deleted, gave for it): equal results, errors and traces (durations aside).
 */
async function compare(options: Omit<RunPipelineOptions, 'services' | 'environment'>) {
  const plain = { environment: 'client', services, ...options } as const;
  const inline = await runPipeline(plain);
  expect(strip(inline)).toMatchSnapshot();
  return inline;
}

async function both(options: Omit<RunPipelineOptions, 'services' | 'environment'>) {
  const plain = { environment: 'client', services, ...options } as const;
  const withTimeouts = { ...plain, functions: timed(options.functions)! };
  const inline = await runPipeline(plain);
  const recorded = strip(inline);
  expect(recorded).toMatchSnapshot();
  expect(strip(await runPipeline(withTimeouts))).toEqual(recorded);
  return inline;
}

describe('inline segments (guest-run node lists) behave like the host walker', () => {
  test('the planner makes one segment of a whole pipeline, script nodes included (an async one: it awaits user code)', () => {
    const nodes: PipelineNode[] = [
      { functionPackage: F('set'), settings: { a: '{{ 1 }}' } },
      { type: 'loop', range: { from: 1, to: 3 }, functions: [{ functionPackage: F('set'), settings: { a: '{{ a + currentItem }}' } }] },
      { functionPackage: F('script'), settings: { code: 'return {}' } },
      { functionPackage: F('return'), settings: { value: '{{ a }}' } },
    ];
    const indexes = new Map(collectExpressions(nodes).map((e, i) => [e, i]));
    const plan = planPipeline(nodes, (e) => indexes.get(e)!, 100);
    expect(plan.async).toBe(true);
    expect(plan.nodes.filter((n) => n.code).map((n) => [n.path, n.code])).toEqual([['functions[2]', { kind: 'script', source: 'return {}' }]]);
    // A node whose expression did not compile is compiled too: it fails with the compiler's error when it is reached.
    const broken = planPipeline(nodes, (e) => (e === 'a' ? { errorType: 'SyntaxError', message: 'unexpected token' } : indexes.get(e)!), 100);
    expect(broken.nodes.map((n) => n.path)).toEqual(plan.nodes.map((n) => n.path));
    expect(broken.source).toContain('X(4,"EXPRESSION_FAILED","SyntaxError","Invalid expression \\"a\\": unexpected token")');
  });

  test('loops over items and ranges, nested, with if/else, gates, set, log and return', async () => {
    const o = await both({
      payload: { items: [3, 4, 5, 6] },
      functions: [
        { functionPackage: F('set'), settings: { even: 0, seen: [] } },
        {
          type: 'loop',
          items: 'items',
          functions: [
            {
              type: 'if',
              conditions: [
                { condition: 'currentItem % 2 === 0', functions: [{ functionPackage: F('set'), settings: { even: '{{ even + 1 }}' } }] },
                { condition: 'currentItem === 5', functions: [{ functionPackage: F('log'), settings: { message: 'five at {{ currentIndex }}' } }] },
              ],
              elseFunctions: [{ functionPackage: F('set'), settings: { seen: '{{ seen.concat([currentItem]) }}' } }],
            },
            {
              type: 'loop',
              range: { from: 1, to: '{{ currentIndex }}' },
              functions: [{ functionPackage: F('set'), settings: { inner: '{{ [currentItem, currentIndex] }}' } }],
            },
            {
              functionPackage: F('if'),
              settings: { condition: 'currentItem > 4' },
              functions: [{ functionPackage: F('set'), settings: { big: '{{ currentItem }}' } }],
            },
          ],
        },
        { type: 'loop', items: 'missing', functions: [{ functionPackage: F('set'), settings: { never: true } }] },
        { functionPackage: F('set'), settings: { after: '{{ typeof currentItem }}', label: 'even: {{ even }}', n: { deep: ['{{ even * 10 }}', 'x'] } } },
        { type: 'if', conditions: [{ condition: 'even > 10', functions: [] }] },
        {
          type: 'loop',
          range: { from: 0, to: 9 },
          functions: [
            {
              type: 'if',
              conditions: [
                {
                  condition: 'currentItem === 2',
                  functions: [{ functionPackage: F('return'), settings: { value: '{{ { even, seen, inner, big, after, label, n, at: currentItem } }}' } }],
                },
              ],
            },
          ],
        },
        { functionPackage: F('set'), settings: { unreachable: true } },
      ],
    });
    expect(o.ok && o.result).toEqual({ even: 2, seen: [3], inner: [3, 2], big: 6, after: 'undefined', label: 'even: 2', n: { deep: [20, 'x'] }, at: 2 });
    expect(o.trace.filter((t) => t.outcome === 'log')).toEqual([
      {
        path: 'functions[1].functions[0].conditions[1].functions[0]',
        package: F('log'),
        startMs: expect.any(Number),
        durationMs: 0,
        outcome: 'log',
        message: 'five at 2',
        iteration: 2,
      },
    ]);
  });

  test('a failing expression inside nested inline loops traces the node and each ancestor with its iteration', async () => {
    const o = await both({
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 2 },
          functions: [
            {
              type: 'loop',
              range: { from: 0, to: 3 },
              functions: [{ functionPackage: F('set'), settings: { x: '{{ currentItem === 2 && currentIndex === 2 ? missing.name : 1 }}' } }],
            },
          ],
        },
      ],
    });
    expect(o.ok).toBe(false);
    if (o.ok) return;
    expect(o.error.code).toBe('FUNCTION_FAILED');
    expect(o.error.errorType).toBe('ReferenceError');
    // The message names the variable and the expression.
    expect(o.error.errorMessage).toBe("'missing' is not defined (expression: currentItem === 2 && currentIndex === 2 ? missing.name : 1)");
    expect(o.trace.filter((t) => t.outcome === 'failed').map((t) => [t.path, t.iteration])).toEqual([
      ['functions[0].functions[0].functions[0]', 2],
      ['functions[0].functions[0]', 0],
      ['functions[0]', undefined],
    ]);
  });

  test('engine failures inside inline loops: condition errors, items that are not arrays, bad range bounds, loop limit', async () => {
    const condition = await both({
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 1 },
          functions: [
            {
              type: 'if',
              conditions: [
                { condition: 'false', functions: [] },
                { condition: 'nope.x', functions: [] },
              ],
            },
          ],
        },
      ],
    });
    expect(!condition.ok && [condition.error.code, condition.error.errorMessage]).toEqual([
      'EXPRESSION_FAILED',
      expect.stringMatching(/^conditions\[1\]\.condition: .*nope/),
    ]);
    const notArray = await both({
      payload: { items: 5 },
      functions: [{ type: 'loop', range: { from: 0, to: 0 }, functions: [{ type: 'loop', items: 'items', functions: [] }] }],
    });
    expect(!notArray.ok && [notArray.error.code, notArray.error.errorMessage]).toEqual(['EXPRESSION_FAILED', 'loop items "items" is not an array']);
    const bound = await both({ functions: [{ type: 'loop', range: { from: 0, to: "{{ 'x' }}" }, functions: [] }] });
    expect(!bound.ok && [bound.error.code, bound.error.errorMessage]).toEqual(['EXPRESSION_FAILED', 'loop range.to must be an integer, got "x"']);
    const long = await both({ functions: [{ type: 'loop', range: { from: 0, to: "{{ 'x'.repeat(1200) }}" }, functions: [] }] });
    expect(!long.ok && [long.error.code, long.error.errorType, long.error.errorMessage]).toEqual([
      'EXPRESSION_FAILED',
      'TypeError',
      'loop range.to must be an integer, got a value over 1000 characters of JSON',
    ]);
    const limit = await both({
      limits: { maxLoopIterations: 10 },
      functions: [{ type: 'loop', range: { from: 1, to: 3 }, functions: [{ type: 'loop', range: { from: 1, to: 11 }, functions: [] }] }],
    });
    expect(!limit.ok && [limit.error.code, limit.error.errorMessage]).toEqual(['LOOP_LIMIT', 'The loop has 11 iterations; the limit is 10']);
  });

  test('a failing nested function of a function node traces only the failing node, as the walker does', async () => {
    const failed = await both({
      functions: [
        {
          functionPackage: 'com.client.function.set',
          settings: { a: 1 },
          functions: [{ functionPackage: 'com.client.function.set', settings: { b: '{{ missing.x }}' } }],
        },
      ],
    });
    expect(failed.trace.map((t) => [t.path, t.outcome])).toEqual([
      ['functions[0]', 'ok'],
      ['functions[0].functions[0]', 'failed'],
    ]);
  });

  test('continueOnError on a host-run parent: the run goes on with currentItem restored', async () => {
    const o = await runPipeline({
      environment: 'client',
      services,
      payload: { items: ['a', 'b'] },
      functions: [
        {
          type: 'loop',
          items: 'items',
          functions: [
            {
              type: 'if',
              continueOnError: true,
              conditions: [
                {
                  condition: 'true',
                  functions: [{ type: 'loop', range: { from: 5, to: 6 }, functions: [{ functionPackage: F('set'), settings: { x: '{{ boom() }}' } }] }],
                },
              ],
            },
            { functionPackage: F('set'), settings: { last: '{{ [currentItem, currentIndex, lastError.code] }}' } },
          ],
        },
        { functionPackage: F('return'), settings: { value: '{{ [last, typeof currentItem] }}' } },
      ],
    });
    expect(o.ok && o.result).toEqual([['b', 1, 'FUNCTION_FAILED'], 'undefined']);
  });

  test('an infinite loop inside an inline segment is stopped by the deadline (TIMEOUT) and traced', async () => {
    const o = await runPipeline({
      environment: 'client',
      services,
      limits: { runTimeoutMs: 300 },
      functions: [{ type: 'loop', range: { from: 0, to: 5 }, functions: [{ functionPackage: F('set'), settings: { x: '{{ (() => { for (;;) {} })() }}' } }] }],
    });
    expect(!o.ok && o.error.code).toBe('TIMEOUT');
    expect(o.trace.filter((t) => t.outcome === 'failed').map((t) => [t.path, t.iteration])).toEqual([
      ['functions[0].functions[0]', 0],
      ['functions[0]', undefined],
    ]);
  });

  describe('compiled node timeouts (DP/DQ in the segment) end the node, not the run, like the walker', () => {
    const spin = '{{ (() => { for (;;) {} })() }}';

    test('a timed inline loop whose body spins fails with the node timeout; a continueOnError above lets the run go on', async () => {
      const o = await compare({
        limits: { runTimeoutMs: 20_000 },
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 0 },
            continueOnError: true,
            functions: [{ type: 'loop', range: { from: 0, to: 5 }, timeout: 100, functions: [{ functionPackage: F('set'), settings: { x: spin } }] }],
          },
          { type: 'loop', range: { from: 1, to: 3 }, timeout: 10_000, functions: [{ functionPackage: F('set'), settings: { n: '{{ currentItem }}' } }] },
          { functionPackage: F('return'), settings: { value: '{{ [n, lastError.code, lastError.errorMessage] }}' } },
        ],
      });
      expect(o.ok && o.result).toEqual([3, 'TIMEOUT', 'The function exceeded its timeout']);
      expect(o.trace.filter((t) => t.outcome === 'failed').map((t) => [t.path, t.iteration, t.message])).toEqual([
        ['functions[0].functions[0].functions[0]', 0, 'TimeoutError: The function exceeded its timeout'],
        ['functions[0].functions[0]', 0, 'TimeoutError: The function exceeded its timeout'],
        ['functions[0]', undefined, 'TimeoutError: The function exceeded its timeout'],
      ]);
    });

    test('after a timed node ends, the run deadline applies again (not the node deadline)', async () => {
      const o = await compare({
        // Bounds far above what the trivial nodes take, also on a loaded machine.
        limits: { runTimeoutMs: 2500 },
        functions: [
          { type: 'if', timeout: 600, conditions: [{ condition: 'true', functions: [{ functionPackage: F('set'), settings: { a: 1 }, timeout: 300 }] }] },
          { functionPackage: F('set'), settings: { x: spin } },
        ],
      });
      expect(!o.ok && [o.error.code, o.error.errorMessage]).toEqual(['TIMEOUT', 'The run exceeded its time limit']);
    });

    test('a function node timeout covers its settings, not its nested functions; the inner timeout wins when shorter', async () => {
      const slowSettings = await compare({
        limits: { runTimeoutMs: 20_000 },
        functions: [
          { type: 'loop', range: { from: 0, to: 2 }, timeout: 10_000, functions: [{ functionPackage: F('set'), timeout: 100, settings: { x: spin } }] },
        ],
      });
      expect(!slowSettings.ok && slowSettings.error.errorMessage).toBe('The function exceeded its timeout');
      expect(slowSettings.trace.filter((t) => t.outcome === 'failed').map((t) => t.path)).toEqual(['functions[0].functions[0]', 'functions[0]']);
      const nested = await compare({
        limits: { runTimeoutMs: 2500 },
        functions: [{ functionPackage: F('set'), timeout: 500, settings: { a: 1 }, functions: [{ functionPackage: F('set'), settings: { x: spin } }] }],
      });
      expect(!nested.ok && nested.error.errorMessage).toBe('The run exceeded its time limit');
    });

    test('a longer timeout inside a shorter one leaves the shorter one in force', async () => {
      const o = await compare({
        limits: { runTimeoutMs: 20_000 },
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 1 },
            timeout: 1000,
            functions: [
              { functionPackage: F('set'), settings: { a: 1 }, timeout: 15_000 },
              {
                type: 'if',
                timeout: 15_000,
                conditions: [{ condition: 'currentItem === 1', functions: [{ functionPackage: F('set'), settings: { x: spin } }] }],
              },
            ],
          },
        ],
      });
      expect(!o.ok && [o.error.code, o.error.errorMessage]).toEqual(['TIMEOUT', 'The function exceeded its timeout']);
      expect(o.trace.filter((t) => t.outcome === 'failed').map((t) => [t.path, t.iteration])).toEqual([
        ['functions[0].functions[1].conditions[0].functions[0]', 1],
        ['functions[0].functions[1]', 1],
        ['functions[0]', undefined],
      ]);
    });

    test('the planner keeps timed, retried and continueOnError nodes inline; a retry that waits makes its segment async', () => {
      const nodes: PipelineNode[] = [
        { type: 'loop', range: { from: 1, to: 3 }, timeout: 50, functions: [{ functionPackage: F('set'), settings: { a: 1 }, timeout: 5 }] },
        { functionPackage: F('set'), settings: { b: 1 }, retry: { attempts: 2 } },
        { type: 'if', continueOnError: true, conditions: [{ condition: 'true', functions: [] }] },
        { functionPackage: F('set'), settings: { c: 1 }, retry: { attempts: 2, delayMs: 10 } },
      ];
      const indexes = new Map(collectExpressions(nodes).map((e, i) => [e, i]));
      const plan = planPipeline(nodes, (e) => indexes.get(e)!, 100);
      expect(plan.async).toBe(true);
      expect(plan.source).toContain('DP(50)');
      expect(plan.source).toContain('DP(5)');
      expect(plan.nodes.map((n) => n.guard)).toEqual([
        undefined,
        undefined,
        { attempts: 2, continueOnError: false },
        { attempts: 1, continueOnError: true },
        { attempts: 2, continueOnError: false, wait: { delayMs: 10, exponential: false } },
      ]);
    });
  });

  describe('compiled retry and continueOnError (W → the host guard) trace and recover like the walker', () => {
    const failing = (o: RunOutcome) =>
      o.trace.filter((t) => t.outcome === 'failed' || t.outcome === 'retried').map((t) => [t.path, t.outcome, t.iteration, t.retries]);

    test('continueOnError on an inline loop: the failure at one item ends the loop, restores the scope, sets lastError', async () => {
      const o = await compare({
        functions: [
          {
            type: 'loop',
            items: '[10, 20]',
            functions: [
              {
                type: 'loop',
                range: { from: 0, to: 3 },
                continueOnError: true,
                functions: [
                  { functionPackage: F('set'), settings: { seen: '{{ seen + 1 }}' } },
                  { type: 'if', conditions: [{ condition: 'currentItem === 2 ? nope.x : false', functions: [] }] },
                ],
              },
              { functionPackage: F('set'), settings: { outer: '{{ (context.outer || []).concat([currentItem, currentIndex]) }}' } },
            ],
          },
          { functionPackage: F('return'), settings: { value: '{{ { seen, outer, path: lastError.path, code: lastError.code } }}' } },
        ],
        payload: { seen: 0 },
      });
      expect(o.ok && o.result).toEqual({ seen: 6, outer: [10, 0, 20, 1], path: 'functions[0].functions[0]', code: 'EXPRESSION_FAILED' });
      expect(failing(o)).toEqual([
        ['functions[0].functions[0].functions[1]', 'failed', 2, undefined],
        ['functions[0].functions[0]', 'failed', 0, undefined],
        ['functions[0].functions[0].functions[1]', 'failed', 2, undefined],
        ['functions[0].functions[0]', 'failed', 1, undefined],
      ]);
    });

    test('retry: failed attempts are traced as retried, and the attempt that succeeds carries the count', async () => {
      const o = await compare({
        functions: [
          { functionPackage: F('set'), settings: { n: 0 } },
          {
            functionPackage: F('set'),
            retry: { attempts: 4 },
            settings: { got: '{{ (context.n = n + 1) < 3 ? nope.x : n }}' },
            functions: [{ functionPackage: F('set'), settings: { child: true } }],
          },
          { functionPackage: F('return'), settings: { value: '{{ [got, child] }}' } },
        ],
      });
      expect(o.ok && o.result).toEqual([3, true]);
      expect(failing(o)).toEqual([
        ['functions[1]', 'retried', undefined, undefined],
        ['functions[1]', 'retried', undefined, undefined],
      ]);
      expect(o.trace.find((t) => t.path === 'functions[1]' && t.outcome === 'ok')?.retries).toBe(2);
    });

    test('a failure passes up through guards without continueOnError, and the first one with it stops it', async () => {
      const o = await compare({
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 1 },
            continueOnError: true,
            functions: [
              // A `retry` on an if node (not in its type, but accepted on the wire) is ignored, as by the walker.
              {
                type: 'if',
                retry: { attempts: 2 },
                conditions: [{ condition: 'true', functions: [{ functionPackage: F('set'), retry: { attempts: 2 }, settings: { x: '{{ nope.y }}' } }] }],
              } as PipelineNode,
            ],
          },
          {
            functionPackage: F('set'),
            continueOnError: true,
            settings: { y: '{{ nope.z }}' },
            functions: [{ functionPackage: F('set'), settings: { never: true } }],
          },
          {
            functionPackage: F('if'),
            continueOnError: true,
            settings: { condition: false },
            functions: [{ functionPackage: F('set'), settings: { never2: true } }],
          },
          { functionPackage: F('return'), settings: { value: '{{ [typeof never, typeof never2, lastError.path] }}' } },
        ],
      });
      expect(o.ok && o.result).toEqual(['undefined', 'undefined', 'functions[1]']);
      // `retry` applies to function nodes only: the if node passes the failure up at once.
      expect(failing(o)).toEqual([
        ['functions[0].functions[0].conditions[0].functions[0]', 'retried', 0, undefined],
        ['functions[0].functions[0].conditions[0].functions[0]', 'failed', 0, 1],
        ['functions[0].functions[0]', 'failed', 0, undefined],
        ['functions[0]', 'failed', undefined, undefined],
        ['functions[1]', 'failed', undefined, undefined],
      ]);
    });

    test('a node timeout inside a guard is retried and then given up; the run goes on under its own deadline', async () => {
      const o = await compare({
        limits: { runTimeoutMs: 20_000 },
        functions: [
          { functionPackage: F('set'), timeout: 100, retry: { attempts: 2 }, continueOnError: true, settings: { x: '{{ (() => { for (;;) {} })() }}' } },
          { type: 'loop', range: { from: 1, to: 2 }, functions: [{ functionPackage: F('set'), settings: { n: '{{ currentItem }}' } }] },
          { functionPackage: F('return'), settings: { value: '{{ [n, lastError.errorMessage] }}' } },
        ],
      });
      expect(o.ok && o.result).toEqual([2, 'The function exceeded its timeout']);
      expect(failing(o)).toEqual([
        ['functions[0]', 'retried', undefined, undefined],
        ['functions[0]', 'failed', undefined, 1],
      ]);
    });

    test('an attempt the run timeout interrupts is traced with the retries before it', async () => {
      const o = await compare({
        limits: { runTimeoutMs: 1500 },
        payload: { n: 0 },
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 1 },
            continueOnError: true,
            functions: [
              { functionPackage: F('set'), retry: { attempts: 3 }, settings: { x: '{{ (context.n = n + 1) === 1 ? nope : (() => { for (;;) {} })() }}' } },
            ],
          },
        ],
      });
      expect(!o.ok && o.error.code).toBe('TIMEOUT');
      expect(failing(o)).toEqual([
        ['functions[0].functions[0]', 'retried', 0, undefined],
        ['functions[0].functions[0]', 'failed', 0, 1],
        ['functions[0]', 'failed', undefined, undefined],
      ]);
    });

    // Found by review: user expressions tampering with the built-ins the program uses, thrown values of every kind.
    test('an expression that replaces Array.prototype.pop or Date.now moves no deadline', { timeout: 60_000 }, async () => {
      const spin = '{{ (() => { for (;;) {} })() }}';
      const popped = await compare({
        limits: { runTimeoutMs: 3000 },
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 0 },
            timeout: 1000,
            functions: [
              {
                type: 'if',
                continueOnError: true,
                conditions: [
                  {
                    condition: 'true',
                    functions: [
                      { functionPackage: F('set'), timeout: 100_000, settings: { t: '{{ (Array.prototype.pop = function () { return 1 }, 1) }}' } },
                      { functionPackage: F('set'), settings: { x: '{{ nope.x }}' } },
                    ],
                  },
                ],
              },
            ],
          },
          { functionPackage: F('set'), settings: { x: spin } },
        ],
      });
      expect(!popped.ok && [popped.error.code, popped.error.errorMessage]).toEqual(['TIMEOUT', 'The run exceeded its time limit']);
      const clock = await compare({
        limits: { runTimeoutMs: 4000 },
        functions: [
          { functionPackage: F('set'), settings: { t: '{{ (Date.now = function () { return 9e15 }, 1) }}' } },
          { functionPackage: F('set'), timeout: 300, continueOnError: true, settings: { x: spin } },
          { functionPackage: F('return'), settings: { value: '{{ lastError.errorMessage }}' } },
        ],
      });
      expect(clock.ok && clock.result).toBe('The function exceeded its timeout');
    });

    test('thrown undefined and thrown functions are failures like any other', async () => {
      for (const thrown of ['undefined', 'function () { return 1 }', 'null', '0']) {
        const retried = await compare({
          functions: [
            { functionPackage: F('set'), retry: { attempts: 2 }, settings: { x: `{{ (() => { throw ${thrown} })() }}` } },
            { functionPackage: F('return'), settings: { value: 'reached' } },
          ],
        });
        expect(!retried.ok && retried.error.code).toBe('FUNCTION_FAILED');
        const given = await compare({
          functions: [
            { functionPackage: F('set'), continueOnError: true, settings: { x: `{{ (() => { throw ${thrown} })() }}` } },
            { functionPackage: F('return'), settings: { value: '{{ typeof lastError }}' } },
          ],
        });
        expect(given.ok && given.result).toBe('object');
      }
    });

    test('an engine failure caught by a guard does not name later failures', async () => {
      const o = await compare({
        functions: [
          { type: 'loop', items: '5', continueOnError: true, functions: [{ functionPackage: F('set'), settings: { a: 1 } }] },
          { functionPackage: F('set'), continueOnError: true, settings: { x: '{{ nope }}' } },
          { functionPackage: F('set'), settings: { y: '{{ nope2 }}' } },
        ],
      });
      expect(!o.ok && [o.error.code, o.error.errorType]).toEqual(['FUNCTION_FAILED', 'ReferenceError']);
    });

    test('an attempt that would start past the deadline of the node around it fails at once', async () => {
      const o = await compare({
        limits: { runTimeoutMs: 20_000 },
        payload: { n: 0 },
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 0 },
            timeout: 300,
            continueOnError: true,
            functions: [
              {
                functionPackage: F('set'),
                timeout: 10_000,
                retry: { attempts: 2 },
                settings: { x: '{{ (context.n = n + 1) === 1 ? (() => { for (;;) {} })() : 1 }}' },
              },
            ],
          },
          { functionPackage: F('return'), settings: { value: '{{ [typeof x, n, lastError.code] }}' } },
        ],
      });
      expect(o.ok && o.result).toEqual(['undefined', 1, 'TIMEOUT']);
      expect(failing(o)).toEqual([
        ['functions[0].functions[0]', 'retried', 0, undefined],
        ['functions[0].functions[0]', 'failed', 0, 1],
        ['functions[0]', 'failed', undefined, undefined],
      ]);
    });

    test('with a short trace: listed entries, then counts per node, as the walker lists them', async () => {
      for (const maxTraceEntries of [3, 10, 40]) {
        const o = await compare({
          limits: { maxTraceEntries },
          functions: [
            {
              type: 'loop',
              range: { from: 0, to: 49 },
              functions: [
                {
                  functionPackage: F('set'),
                  continueOnError: true,
                  retry: { attempts: 2 },
                  settings: { x: '{{ currentItem % 3 === 1 ? nope : currentItem }}' },
                },
                { functionPackage: F('log'), settings: { message: 'at {{ currentItem }}' } },
              ],
            },
            { functionPackage: F('return'), settings: { value: '{{ x }}' } },
          ],
        });
        expect(o.ok && o.result).toBe(48);
      }
    });

    test('the run timeout is not caught by continueOnError', async () => {
      const o = await compare({
        limits: { runTimeoutMs: 300 },
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 1 },
            continueOnError: true,
            functions: [{ functionPackage: F('set'), retry: { attempts: 3 }, settings: { x: '{{ (() => { for (;;) {} })() }}' } }],
          },
          { functionPackage: F('return'), settings: { value: 'unreachable' } },
        ],
      });
      expect(!o.ok && [o.error.code, o.error.errorMessage]).toEqual(['TIMEOUT', 'The run exceeded its time limit']);
      expect(failing(o)).toEqual([
        ['functions[0].functions[0]', 'failed', 0, undefined],
        ['functions[0]', 'failed', undefined, undefined],
      ]);
    });
  });

  test('large loops: the first maxTraceEntries entries are listed, later runs are aggregated per node path', async () => {
    const o = await both({
      limits: { maxTraceEntries: 10 },
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 99 },
          functions: [{ functionPackage: F('set'), settings: { n: '{{ currentItem }}', condition: '{{ currentItem % 4 !== 3 }}' } }],
        },
        { functionPackage: F('return'), settings: { value: '{{ n }}' } },
      ],
    });
    expect(o.ok && o.result).toBe(98);
    const listed = o.trace.filter((t) => !t.message?.includes('not listed'));
    expect(listed).toHaveLength(10);
    const summaries = o.trace.filter((t) => t.message?.includes('not listed')).map((t) => [t.path, t.outcome, t.message]);
    expect(summaries).toEqual([
      ['functions[0].functions[0]', 'ok', '67 more ok runs, not listed one by one'],
      ['functions[0].functions[0]', 'skipped', '23 more skipped runs, not listed one by one'],
      ['functions[0]', 'ok', '1 more ok runs, not listed one by one'],
      ['functions[1]', 'ok', '1 more ok runs, not listed one by one'],
    ]);
  });
});

describe('trace values: input and output of every listed entry, the same on both paths', () => {
  const values = (o: RunOutcome) => o.trace.map((t) => [t.path, t.outcome, t.input, t.output, t.iteration]);

  test('set, return, log, if and loop nodes (items, range, no items, else) record what they took and gave', async () => {
    const o = await both({
      payload: { items: [1, 2] },
      functions: [
        { functionPackage: F('set'), settings: { total: 0, label: 'n={{ items.length }}' } },
        {
          type: 'loop',
          items: 'items',
          functions: [
            {
              type: 'if',
              conditions: [{ condition: 'currentItem > 1', functions: [{ functionPackage: F('set'), settings: { total: '{{ total + currentItem }}' } }] }],
              elseFunctions: [{ functionPackage: F('log'), settings: { message: 'small {{ currentItem }}' } }],
            },
          ],
        },
        { type: 'loop', items: 'missing', functions: [] },
        { type: 'loop', range: { from: 2, to: '{{ total }}' }, functions: [] },
        { functionPackage: F('if'), settings: { condition: '{{ total > 5 }}' } },
        { type: 'if', conditions: [{ condition: 'false' }, { condition: 'total < 0' }] },
        { functionPackage: F('return'), settings: { value: '{{ { total } }}' } },
      ],
    });
    expect(o.ok && o.result).toEqual({ total: 2 });
    expect(values(o)).toEqual([
      ['functions[0]', 'ok', { total: 0, label: 'n=2' }, { total: 0, label: 'n=2' }, undefined],
      ['functions[1].functions[0].elseFunctions[0]', 'log', undefined, undefined, 0],
      ['functions[1].functions[0].elseFunctions[0]', 'ok', { message: 'small 1' }, undefined, 0],
      ['functions[1].functions[0]', 'ok', { conditions: [false] }, { branch: 'elseFunctions' }, 0],
      ['functions[1].functions[0].conditions[0].functions[0]', 'ok', { total: 2 }, { total: 2 }, 1],
      ['functions[1].functions[0]', 'ok', { conditions: [true] }, { branch: 'conditions[0]' }, 1],
      ['functions[1]', 'ok', { items: [1, 2] }, { iterations: 2 }, undefined],
      ['functions[2]', 'ok', { items: null }, { iterations: 0 }, undefined],
      ['functions[3]', 'ok', { from: 2, to: 2 }, { iterations: 1 }, undefined],
      ['functions[4]', 'skipped', { condition: false }, undefined, undefined],
      ['functions[5]', 'ok', { conditions: [false, false] }, { branch: null }, undefined],
      ['functions[6]', 'ok', { value: { total: 2 } }, { total: 2 }, undefined],
    ]);
    // Entries start in order, at ms since the run began.
    const starts = o.trace.map((t) => t.startMs!);
    expect(starts.every((t, i) => t >= 0 && t <= o.durationMs + 1 && (i === 0 || t >= starts[i - 1]! - 50))).toBe(true);
  });

  test('long values are truncated, secret-named keys redacted, values without JSON traced as such', async () => {
    const o = await both({
      limits: { traceValueBytes: 100 },
      functions: [
        { functionPackage: F('set'), settings: { headers: { Authorization: 'Bearer abc', 'X-Api-Key': 'k1' }, password: 'p', big: "{{ 'x'.repeat(500) }}" } },
        { functionPackage: F('set'), settings: { fn: '{{ function () {} }}', n: 1 } },
        { functionPackage: F('set'), settings: { f: '{{ function () {} }}' } },
        { functionPackage: F('if'), settings: { condition: true, cycle: '{{ (function () { var a = { userToken: "t" }; a.self = a; return a; })() }}' } },
      ],
    });
    expect(o.ok).toBe(true);
    const [big, fn, f, cyclic] = o.trace;
    const text = JSON.stringify({ headers: { Authorization: '[redacted]', 'X-Api-Key': '[redacted]' }, password: '[redacted]', big: 'x'.repeat(500) });
    expect(big!.input).toEqual({ $truncated: true, length: text.length, preview: text.slice(0, 100) });
    expect(fn!.input).toEqual({ n: 1 });
    expect(f!.input).toEqual({});
    expect(cyclic!.input).toBe('[not JSON]');
    const short = await both({
      functions: [{ functionPackage: F('return'), settings: { value: { user: 'u', apiKey: 'k', session_id: 's', nested: [{ cookie: 'c' }] } } }],
    });
    expect(short.trace[0]!.output).toEqual({ user: 'u', apiKey: '[redacted]', session_id: '[redacted]', nested: [{ cookie: '[redacted]' }] });
  });

  test('the run has a budget for values: past it, entries keep their outcome and the length of what was left out', async () => {
    const o = await both({
      limits: { traceValueBytes: 100 },
      functions: [{ type: 'loop', range: { from: 1, to: 60 }, functions: [{ functionPackage: F('set'), settings: { v: "{{ 'y'.repeat(200) }}" } }] }],
    });
    const sets = o.trace.filter((t) => t.path === 'functions[0].functions[0]');
    expect(sets).toHaveLength(60);
    const kept = sets.filter((t) => (t.input as { preview: string }).preview !== '');
    // 64 values of 100 characters: 32 nodes keep their input and output.
    expect(kept).toHaveLength(32);
    expect(sets[40]).toMatchObject({ outcome: 'ok', input: { $truncated: true, length: 208, preview: '' }, output: { $truncated: true, preview: '' } });
    expect(JSON.stringify(o.trace).length).toBeLessThan(64 * 100 + 60 * 300);
  });

  test('a retried node counts its retries; each attempt is traced with its input', async () => {
    let calls = 0;
    const o = await runPipeline({
      environment: 'server',
      services: { ...services, http: async () => (++calls < 3 ? Promise.reject(new Error('flaky')) : { status: 200, headers: {}, body: { ok: 1 } }) },
      functions: [{ functionPackage: F('http-request'), retry: { attempts: 3 }, settings: { url: 'https://example.test/{{ 1 + 1 }}', method: 'GET' } }],
    });
    expect(o.ok).toBe(true);
    expect(o.trace.map((t) => [t.outcome, t.retries, (t.input as { url: string }).url])).toEqual([
      ['retried', undefined, 'https://example.test/2'],
      ['retried', undefined, 'https://example.test/2'],
      ['ok', 2, 'https://example.test/2'],
    ]);
    expect(o.trace[2]!.output).toEqual({ response: { status: 200, headers: {}, body: { ok: 1 } } });
  });
});

describe('result size', () => {
  test('the result limit counts UTF-8 bytes: fewer characters than the limit can still be too large', async () => {
    const run = (n: number) =>
      runPipeline({
        environment: 'client',
        services,
        limits: { resultBytes: 100 },
        functions: [{ functionPackage: F('return'), settings: { value: `{{ 'é'.repeat(${n}) }}` } }],
      });
    const fits = await run(49); // 98 bytes + 2 quotes
    expect(fits.ok && fits.result).toBe('é'.repeat(49));
    const over = await run(60); // 62 characters of JSON, 122 bytes
    expect(!over.ok && over.error.code).toBe('RESULT_TOO_LARGE');
  });
});

test('the program, its failures and an expression that does not compile leave no handle alive (debug build)', async () => {
  const loop = (functions: PipelineNode[], extra: Partial<PipelineNode> = {}): PipelineNode =>
    ({ type: 'loop', range: { from: 0, to: 3 }, functions, ...extra }) as PipelineNode;
  const pipelines: PipelineNode[][] = [
    [loop([{ functionPackage: F('set'), settings: { x: '{{ currentItem }}' } }]), { functionPackage: F('return'), settings: { value: '{{ x }}' } }],
    [loop([{ functionPackage: F('set'), settings: { x: '{{ nope.x }}' } }])],
    [loop([loop([{ type: 'if', conditions: [{ condition: 'nope', functions: [] }] }], { continueOnError: true })])],
    [{ functionPackage: F('set'), settings: { x: '{{ 1 + }}' } }],
    [loop([{ functionPackage: F('log'), settings: { message: 'at {{ currentItem }}' } }], { timeout: 10_000 })],
  ];
  await expectNoLeaks(pipelines, { environment: 'client', services, limits: { maxTraceEntries: 3 } });
});
