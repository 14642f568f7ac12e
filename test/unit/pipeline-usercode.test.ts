import { describe, expect, test } from 'vitest';
import { expectNoLeaks } from '../helpers/leak-check.js';
import { runWith, userCodeNode } from '../../src/pipeline/runner.js';
import { collectExpressions, planPipeline } from '../../src/pipeline/inline.js';
import { withoutTimes } from '../helpers/pipeline-outcome.js';
import { acquireModule, releaseModule } from '../../src/sandbox/pool.js';
import { openSession } from '../../src/sandbox/session.js';
import type {
  FunctionPackageSource,
  HostServices,
  InPageCode,
  InPageFunction,
  PipelineNode,
  RunOutcome,
  RunPipelineOptions,
} from '../../src/contract/pipeline.js';
import { createFakeServices } from '../browser/pipeline-page/cases.mjs';

/**
 * User code (script nodes, custom functions, page functions in page mode) compiled into the program as awaited
 * host requests (src/pipeline/inline.ts `HU`; src/pipeline/protocol.ts `REQUEST.code`; runner.ts `callCode`).
 * Every pipeline runs with its own fresh fake services; its result, error, trace (times aside) and the host calls
 * made must equal the recorded ones (the snapshots: what the host walker, the engine's former second path and its
 * oracle until it was deleted, gave).
 */
const F = (name: string) => `com.client.function.${name}`;
const set = (settings: Record<string, unknown>, extra: Partial<PipelineNode> = {}): PipelineNode =>
  ({ functionPackage: F('set'), settings, ...extra }) as PipelineNode;
const ret = (value: unknown): PipelineNode => ({ functionPackage: F('return'), settings: { value } });
const script = (code: string, extra: Partial<PipelineNode> & { settings?: Record<string, unknown> } = {}): PipelineNode =>
  ({ functionPackage: F('script'), ...extra, settings: { ...extra.settings, code } }) as PipelineNode;
const custom = (name: string, settings: Record<string, unknown> = {}, extra: Partial<PipelineNode> = {}): PipelineNode =>
  ({ functionPackage: `com.acme.function.${name}`, settings, ...extra }) as PipelineNode;

/** Custom functions of these tests: sync, async with the bridged Client, failing, never settling, spinning. */
const customFunctions: FunctionPackageSource[] = [
  { package: 'com.acme.function.double', code: '(settings, context) => ({ doubled: settings.n * 2 })' },
  {
    package: 'com.acme.function.count',
    code: 'async (settings, context) => { const rows = await Client.DataSources.connect(settings.source).find(); return { counted: rows.length + (context.counted ?? 0) } }',
  },
  { package: 'com.acme.function.fail', code: '(settings) => { throw new RangeError("bad " + settings.n) }' },
  { package: 'com.acme.function.never', code: 'async () => { await new Promise(() => {}); return { never: true } }' },
  { package: 'com.acme.function.spin', code: '() => { for (;;) {} }' },
  { package: 'com.acme.function.log', code: '(settings) => { console.log("custom", settings.n); return undefined }' },
];

const strip = withoutTimes;
type Options = Omit<RunPipelineOptions, 'services' | 'environment'>;

/** Fake services with a data source `slow` whose `find` answers after `ms` (and records when it answered). */
function slow(ms: number): () => { services: HostServices; calls: unknown[][] } {
  return () => {
    const fake = createFakeServices();
    const connect = fake.services.dataSources.connect.bind(fake.services.dataSources);
    return {
      calls: fake.calls,
      services: {
        ...fake.services,
        dataSources: {
          connect(idOrName) {
            if (idOrName !== 'slow') return connect(idOrName);
            const c = connect(1);
            return {
              ...c,
              find: () => {
                fake.calls.push(['slow.find']);
                return new Promise((resolve) =>
                  setTimeout(() => {
                    fake.calls.push(['slow.answered']);
                    resolve(c.find());
                  }, ms),
                );
              },
            };
          },
        },
      },
    };
  };
}

const hooks = { acquire: acquireModule, release: releaseModule };

/** Runs the pipeline; its outcome and host calls must equal the recorded ones. Returns them. */
async function compare(options: Options, { services = () => createFakeServices() } = {}) {
  const compiled = services();
  const inline = await runWith({ environment: 'client', customFunctions, ...options, services: compiled.services }, hooks);
  expect(strip(inline)).toMatchSnapshot();
  expect(compiled.calls).toMatchSnapshot();
  return { outcome: inline, calls: compiled.calls };
}

const outcomes = (o: RunOutcome) => o.trace.map((t) => [t.path, t.outcome, t.iteration, t.retries]);
const result = (o: RunOutcome) => (o.ok ? o.result : [o.error.code, o.error.errorType, o.error.errorMessage]);

describe('user code compiled as awaited host requests agrees with the walker', () => {
  test('script nodes and custom functions, sync and async with Client bridges, in loops, ifs and nested functions', async () => {
    const { outcome, calls } = await compare({
      payload: { names: ['Ann', 'Bob', 'Cy'] },
      functions: [
        set({ total: 0 }),
        {
          type: 'loop',
          items: 'names',
          functions: [
            {
              type: 'if',
              conditions: [
                {
                  condition: 'currentItem !== "Bob"',
                  functions: [
                    script(
                      'const c = Client.DataSources.connect(1); const e = await c.insert({ name: settings.name, at: currentIndex }); context.total += 1; return { last: e.id, seen: [currentItem, currentIndex] }',
                      { settings: { name: '{{ currentItem }}' }, functions: [set({ after: '{{ last }}' })] },
                    ),
                  ],
                },
              ],
              elseFunctions: [custom('double', { n: '{{ currentIndex }}' }), custom('count', { source: 1 })],
            },
          ],
        },
        script('return { sync: settings.a + 1 }', { settings: { a: '{{ total }}' } }),
        custom('count', { source: 'people', condition: '{{ total > 5 }}' }),
        ret('{{ [total, last, after, doubled, counted, sync, typeof currentItem] }}'),
      ],
    });
    expect(result(outcome)).toEqual([2, 11, 11, 2, 3, 3, 'undefined']);
    expect(calls.map((c) => c[0])).toEqual(['dataSources.insert', 'dataSources.find', 'dataSources.insert']);
    const first = outcome.trace.find((t) => t.package === F('script'))!;
    expect([first.iteration, first.input, first.output]).toEqual([
      0,
      { name: 'Ann', code: first.input && (first.input as { code: string }).code },
      { last: 10, seen: ['Ann', 0] },
    ]);
    expect(outcome.trace.find((t) => t.outcome === 'skipped')?.path).toBe('functions[3]');
  });

  test('console lines of user code come after what the segment traced before them, with the node path and iteration', async () => {
    const { outcome } = await compare({
      functions: [
        set({ a: 1 }),
        {
          type: 'loop',
          range: { from: 0, to: 1 },
          functions: [set({ b: '{{ currentItem }}' }), script('console.log("script", currentIndex); console.warn({ w: 1 })'), custom('log', { n: 7 })],
        },
        ret('{{ b }}'),
      ],
    });
    expect(outcome.trace.filter((t) => t.outcome === 'log').map((t) => [t.path, t.iteration, t.message])).toEqual([
      ['functions[1].functions[1]', 0, 'script 0'],
      ['functions[1].functions[1]', 0, '[warn] {"w":1}'],
      ['functions[1].functions[2]', 0, 'custom 7'],
      ['functions[1].functions[1]', 1, 'script 1'],
      ['functions[1].functions[1]', 1, '[warn] {"w":1}'],
      ['functions[1].functions[2]', 1, 'custom 7'],
    ]);
  });

  test('a small trace filled by console lines: listed and aggregated entries agree', async () => {
    await compare({
      limits: { maxTraceEntries: 6 },
      functions: [
        { type: 'loop', range: { from: 0, to: 4 }, functions: [set({ b: '{{ currentItem }}' }), script('console.log(currentIndex)'), set({ c: 1 })] },
      ],
    });
  });

  test('user code that changes its settings and returns them: the input as before the call, the output as after it', async () => {
    const { outcome } = await compare({
      functions: [script('settings.extra = 1; return settings', { settings: { n: 1 } }), custom('double', { n: '{{ n }}' })],
    });
    expect([outcome.trace[0]!.input, outcome.trace[0]!.output]).toEqual([
      { n: 1, code: 'settings.extra = 1; return settings' },
      { n: 1, code: 'settings.extra = 1; return settings', extra: 1 },
    ]);
  });

  test('failing user code deep in loops and ifs traces its input, the node and each ancestor with its iteration', async () => {
    const { outcome } = await compare({
      functions: [
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          functions: [{ type: 'if', conditions: [{ condition: 'currentItem === 2', functions: [custom('fail', { n: '{{ currentItem }}' })] }] }],
        },
      ],
    });
    expect(result(outcome)).toEqual(['FUNCTION_FAILED', 'RangeError', 'bad 2']);
    expect(outcome.trace.filter((t) => t.outcome === 'failed').map((t) => [t.path, t.iteration, t.input])).toEqual([
      ['functions[0].functions[0].conditions[0].functions[0]', 1, { n: 2 }],
      ['functions[0].functions[0]', 1, undefined],
      ['functions[0]', undefined, undefined],
    ]);
    const thrown = await compare({ functions: [script('throw "plain"')] });
    expect(result(thrown.outcome)).toEqual(['FUNCTION_FAILED', 'Error', 'plain']);
    const syntax = await compare({ functions: [set({ a: 1 }), script('return {', { continueOnError: true }), ret('{{ lastError.errorType }}')] });
    expect(result(syntax.outcome)).toBe('SyntaxError');
  });

  test('continueOnError: every failing iteration traced, lastError set, the loop goes on', async () => {
    const { outcome } = await compare({
      functions: [
        set({ n: 0 }),
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          functions: [
            script('if (currentItem !== 2) throw new TypeError("no " + currentItem); return { ok: currentItem }', { continueOnError: true }),
            set({ n: '{{ n + 1 }}' }),
          ],
        },
        ret('{{ [n, ok, lastError.code, lastError.errorMessage, lastError.path] }}'),
      ],
    });
    expect(result(outcome)).toEqual([3, 2, 'FUNCTION_FAILED', 'no 3', 'functions[1].functions[0]']);
  });

  test('retry: failed attempts traced as retried with their input, the success carries the count; exhausted, with a wait', async () => {
    const { outcome } = await compare({
      functions: [
        script('context.tries = (context.tries ?? 0) + 1; if (context.tries < 3) throw new Error("try " + context.tries); return { done: context.tries }', {
          retry: { attempts: 3 },
          settings: { s: 1 },
        }),
        ret('{{ done }}'),
      ],
    });
    expect(result(outcome)).toBe(3);
    expect(outcomes(outcome)).toEqual([
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'ok', undefined, 2],
      ['functions[1]', 'ok', undefined, undefined],
    ]);
    expect(outcome.trace[0]!.input).toMatchObject({ s: 1 });
    const waited = await compare({
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 1 },
          functions: [custom('fail', { n: '{{ currentItem }}' }, { retry: { attempts: 3, delayMs: 5, backoff: 'exponential' }, continueOnError: true })],
        },
        ret('{{ lastError.errorMessage }}'),
      ],
    });
    expect(result(waited.outcome)).toBe('bad 1');
    expect(outcomes(waited.outcome).map((e) => e[1])).toEqual(['retried', 'retried', 'failed', 'retried', 'retried', 'failed', 'ok', 'ok']);
  });

  test('a node timeout: a spinning script and a spinning custom function fail with TIMEOUT, caught by continueOnError', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        script('for (;;) {}', { timeout: 100, continueOnError: true }),
        set({ first: '{{ lastError.code }}' }),
        {
          type: 'loop',
          range: { from: 0, to: 1 },
          functions: [custom('spin', {}, { timeout: 50, continueOnError: true, retry: { attempts: 2 } }), set({ i: '{{ currentItem }}' })],
        },
        ret('{{ [first, lastError.code, lastError.errorMessage, i] }}'),
      ],
    });
    expect(result(outcome)).toEqual(['TIMEOUT', 'TIMEOUT', 'The function exceeded its timeout', 1]);
    expect(outcomes(outcome).filter((e) => e[0] === 'functions[2].functions[0]')).toEqual([
      ['functions[2].functions[0]', 'retried', 0, undefined],
      ['functions[2].functions[0]', 'failed', 0, 1],
      ['functions[2].functions[0]', 'retried', 1, undefined],
      ['functions[2].functions[0]', 'failed', 1, 1],
    ]);
    // Spinning after an await: the code's jobs run under its node's deadline, never under the segment's settle.
    const later = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        script('await null; await Client.DataSources.connect(1).find(); for (;;) {}', { timeout: 80, continueOnError: true }),
        set({ first: '{{ lastError.code }}' }),
        script('await Client.DataSources.connect(1).find().then(() => { for (;;) {} })', { timeout: 80, continueOnError: true }),
        ret('{{ [first, lastError.code] }}'),
      ],
    });
    expect(result(later.outcome)).toEqual(['TIMEOUT', 'TIMEOUT']);
    const alone = await compare({ limits: { runTimeoutMs: 20_000 }, functions: [set({ a: 1 }), script('for (;;) {}', { timeout: 80 })] });
    expect(result(alone.outcome)).toEqual(['TIMEOUT', 'TimeoutError', 'The function exceeded its timeout']);
  });

  test('never settling: NEVER_SETTLES fails the node, caught by continueOnError; the run fails without it', async () => {
    const { outcome } = await compare({
      functions: [
        script('await new Promise(() => {}); context.late = true', { continueOnError: true }),
        set({ a: '{{ lastError.code }}' }),
        custom('never', {}, { continueOnError: true, timeout: 5000 }),
        ret('{{ [a, lastError.code, typeof late, typeof never] }}'),
      ],
    });
    expect(result(outcome)).toEqual(['NEVER_SETTLES', 'NEVER_SETTLES', 'undefined', 'undefined']);
    const failed = await compare({ functions: [{ type: 'loop', range: { from: 0, to: 0 }, functions: [custom('never')] }] });
    expect(result(failed.outcome)).toEqual(['NEVER_SETTLES', 'PipelineError', 'The function awaits a promise that can never settle']);
  });

  test('a host call an earlier node started and left in the context can be awaited by a later node', async () => {
    const { outcome } = await compare(
      {
        functions: [
          script('context.p = Client.DataSources.connect("slow").find(); return { started: 1 }'),
          set({ between: '{{ started + 1 }}' }),
          custom('double', { n: '{{ between }}' }),
          script('const rows = await context.p; delete context.p; return { rows: rows.length }'),
          ret('{{ [between, doubled, rows] }}'),
        ],
      },
      { services: slow(50) },
    );
    expect(result(outcome)).toEqual([2, 4, 2]);
  });

  test('timing out while awaiting a host call: the node fails, the late answer resumes nothing', async () => {
    const { outcome, calls } = await compare(
      {
        limits: { runTimeoutMs: 20_000 },
        functions: [
          script('const rows = await Client.DataSources.connect("slow").find(); context.late = rows.length', { timeout: 60, continueOnError: true }),
          set({ a: '{{ lastError.code }}' }),
          // Still running when the late answer comes: it must not resume the node above.
          script('await Client.DataSources.connect("slow").find(); return { b: typeof context.late }'),
          ret('{{ [a, b, typeof late] }}'),
        ],
      },
      { services: slow(150) },
    );
    expect(result(outcome)).toEqual(['TIMEOUT', 'undefined', 'undefined']);
    expect(calls).toEqual([['slow.find'], ['slow.find'], ['slow.answered'], ['dataSources.find', 1], ['slow.answered'], ['dataSources.find', 1]]);
    // A hanging host call under a retried custom function with a timeout, inside a loop.
    const hung = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 1 },
          functions: [custom('count', { source: 'hang' }, { timeout: 50, retry: { attempts: 2 }, continueOnError: true })],
        },
        ret('{{ [lastError.code, typeof counted] }}'),
      ],
    });
    expect(result(hung.outcome)).toEqual(['TIMEOUT', 'undefined']);
  });

  test('a loop timeout ends the loop while user code awaits: the code fails, then the loop', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 3 },
          timeout: 120,
          functions: [custom('count', { source: 1 }), script('await Client.DataSources.connect("hang").find()')],
        },
      ],
    });
    expect(result(outcome)).toEqual(['TIMEOUT', 'TimeoutError', 'The function exceeded its timeout']);
    expect(outcomes(outcome).slice(-2)).toEqual([
      ['functions[0].functions[1]', 'failed', 0, undefined],
      ['functions[0]', 'failed', undefined, undefined],
    ]);
  });

  test('the run timeout while user code awaits or spins is not caught by continueOnError or retry', async () => {
    const awaiting = await compare({
      limits: { runTimeoutMs: 300 },
      functions: [script('await Client.DataSources.connect("hang").find()', { continueOnError: true, retry: { attempts: 3 } }), ret('unreachable')],
    });
    expect(result(awaiting.outcome)).toEqual(['TIMEOUT', 'TimeoutError', 'The run exceeded its time limit']);
    const spinning = await compare({
      limits: { runTimeoutMs: 300 },
      functions: [set({ a: 1 }), custom('spin', {}, { continueOnError: true }), ret('unreachable')],
    });
    expect(result(spinning.outcome)).toEqual(['TIMEOUT', 'TimeoutError', 'The run exceeded its time limit']);
  });

  test('cancelling the run while user code awaits the host ends it with ABORTED, as in the walker', async () => {
    const run = async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      const options: RunPipelineOptions = {
        environment: 'client',
        services: createFakeServices().services,
        signal: controller.signal,
        customFunctions,
        functions: [
          { type: 'loop', range: { from: 0, to: 1 }, functions: [custom('count', { source: 'hang' }, { continueOnError: true, retry: { attempts: 2 } })] },
        ],
      };
      return strip(await runWith(options, hooks));
    };
    const compiled = await run();
    expect(compiled).toMatchSnapshot();
    expect(!compiled.ok && compiled.error.code).toBe('ABORTED');
  });

  test('settings that spin past a user-code node timeout are interrupted before the code runs', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        script('context.ran = true', { settings: { x: '{{ (() => { for (;;) {} })() }}' }, timeout: 80, continueOnError: true }),
        ret('{{ [lastError.code, typeof ran] }}'),
      ],
    });
    expect(result(outcome)).toEqual(['TIMEOUT', 'undefined']);
  });

  test('a guarded loop or if holding user code is compiled too (its attempt under WA)', async () => {
    const { outcome } = await compare({
      functions: [
        set({ n: 0 }),
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          continueOnError: true,
          functions: [set({ n: '{{ n + 1 }}' }), custom('fail', { n: '{{ currentItem }}', condition: '{{ currentItem === 2 }}' })],
        },
        { type: 'if', continueOnError: true, conditions: [{ condition: 'n === 2', functions: [script('return { inIf: 1 }')] }] },
        ret('{{ [n, lastError.errorMessage, inIf] }}'),
      ],
    });
    expect(result(outcome)).toEqual([2, 'bad 2', 1]);
  });

  test('guarded loops and ifs that await: nested, timed, failing deep, ended by a return, and under a retried node', async () => {
    const timedLoop = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 3 },
          timeout: 150,
          continueOnError: true,
          functions: [
            custom('count', { source: 1 }),
            { type: 'if', conditions: [{ condition: 'currentItem === 1', functions: [script('await Client.DataSources.connect("hang").find()')] }] },
          ],
        },
        ret('{{ [counted, lastError.code, lastError.path, typeof currentItem] }}'),
      ],
    });
    expect(result(timedLoop.outcome)).toEqual([4, 'TIMEOUT', 'functions[0]', 'undefined']);
    const nested = await compare({
      functions: [
        set({ seen: [] }),
        {
          type: 'loop',
          items: '[1, 2, 3]',
          continueOnError: true,
          functions: [
            {
              type: 'loop',
              range: { from: 1, to: 2 },
              continueOnError: true,
              functions: [
                {
                  type: 'if',
                  continueOnError: true,
                  conditions: [
                    {
                      condition: 'currentItem === 2',
                      functions: [custom('fail', { n: '{{ currentIndex }}' }), script('context.never = 1')],
                    },
                  ],
                  elseFunctions: [script('context.seen.push(currentItem)'), { functionPackage: F('read-datasource'), settings: { dataSourceId: 1 } }],
                },
              ],
            },
            script('if (currentItem === 3) throw new Error("outer " + currentIndex)'),
          ],
        },
        ret('{{ [seen, typeof never, lastError.errorMessage, lastError.path, records.length] }}'),
      ],
    });
    expect(result(nested.outcome)).toEqual([[1, 1, 1], 'undefined', 'outer 2', 'functions[1]', 2]);
    const returned = await compare({
      functions: [
        {
          type: 'loop',
          range: { from: 1, to: 5 },
          continueOnError: true,
          functions: [script('return { k: currentItem }'), { type: 'if', conditions: [{ condition: 'k === 3', functions: [ret('{{ k }}')] }] }],
        },
        ret('unreachable'),
      ],
    });
    expect(result(returned.outcome)).toBe(3);
    const retried = await compare({
      functions: [
        set({ tries: 0 }),
        {
          functionPackage: F('set'),
          settings: { x: 1 },
          retry: { attempts: 2 },
          functions: [
            { type: 'if', continueOnError: true, conditions: [{ condition: 'true', functions: [custom('fail', { n: 'in if' })] }] },
            script('return { after: context.lastError.errorMessage }'),
          ],
        },
        ret('{{ after }}'),
      ],
    });
    expect(result(retried.outcome)).toBe('bad in if');
  });

  test('in page mode, page functions are compiled the same way', async () => {
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => InPageFunction;
    const inPage: InPageCode = {
      script: (_path, code) => new AsyncFunction('settings', 'context', 'Client', 'currentItem', 'currentIndex', code),
      custom: (_pkg, code) => {
        const made = new Function(`return (${code})`)() as (settings: unknown, context: unknown) => unknown;
        return (settings, context) => made(settings, context);
      },
    };
    const page: RunPipelineOptions['customFunctions'] = customFunctions.filter((f) => !f.package.endsWith('.spin'));
    const { outcome } = await compare({
      inPage,
      customFunctions: page,
      limits: { runTimeoutMs: 20_000 },
      functions: [
        {
          type: 'loop',
          range: { from: 1, to: 2 },
          functions: [
            script(
              'const rows = await Client.DataSources.connect(1).find(); context.total = (context.total || 0) + rows.length + currentItem; return currentIndex === 1 ? undefined : { r: 1 }',
            ),
            custom('double', { n: '{{ total }}' }),
            custom('fail', { n: 1 }, { continueOnError: true, retry: { attempts: 2 } }),
          ],
        },
        script('await Client.DataSources.connect("hang").find()', { timeout: 60, continueOnError: true }),
        custom('never', {}, { timeout: 60, continueOnError: true }),
        ret('{{ [total, doubled, r, lastError.code] }}'),
      ],
    });
    expect(result(outcome)).toEqual([7, 14, 1, 'TIMEOUT']);
  });
});

describe('what the guest cannot bend, for user-code requests', () => {
  test('user code cannot reach the host functions of the program, nor its helpers', async () => {
    const probe = 'return { seen: [typeof HQ, typeof GH, typeof DLH, typeof HU, typeof HB, typeof WA, typeof st, typeof api, typeof _] }';
    const { outcome } = await compare({
      functions: [script(probe), ret('{{ seen }}')],
      customFunctions: [{ package: 'com.acme.function.probe', code: `() => { ${probe} }` }],
    });
    expect(result(outcome)).toEqual(Array(9).fill('undefined'));
    const custom2 = await compare({
      functions: [custom('probe'), ret('{{ seen }}')],
      customFunctions: [{ package: 'com.acme.function.probe', code: `() => { ${probe} }` }],
    });
    expect(result(custom2.outcome)).toEqual(Array(9).fill('undefined'));
  });

  test('user code that patches JSON, Date.now and Array.prototype.pop moves no deadline and gets nothing past the host', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        script(
          'Date.now = () => 0; Array.prototype.pop = () => 0; const p = JSON.parse; JSON.parse = (t) => (t[0] === "[" ? [1e9, 1e9] : p(t)); return { patched: 1 }',
        ),
        script('await Client.DataSources.connect("hang").find()', { timeout: 80, continueOnError: true }),
        ret('{{ [patched, lastError.code] }}'),
      ],
    });
    expect(result(outcome)).toEqual([1, 'TIMEOUT']);
  });

  test('user code that patches Promise.prototype cannot resume the program itself (found by review)', async () => {
    // The patch would make `await` of the program's host request call the patched `then` and resume the program
    // early, lifting the next node's timeout; the base script made the constructor read-only, so it throws.
    const patch = `(settings) => {
      const P = Promise.prototype, then0 = P.then; let armed = true;
      Object.defineProperty(P, 'constructor', { value: Object, configurable: true, writable: true });
      P.then = function (a, b) { if (armed && typeof a === 'function' && !('prototype' in a)) { armed = false; a('[1000,1000]'); return; } return then0.call(this, a, b); };
      return { patched: true }; }`;
    const assign = '(settings) => { Promise.prototype.constructor = Object; return { assigned: Promise.prototype.constructor === Promise } }';
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      customFunctions: [
        { package: 'com.acme.function.patch', code: patch },
        { package: 'com.acme.function.assign', code: assign },
      ],
      functions: [
        custom('patch', {}, { continueOnError: true }),
        set({ refused: '{{ lastError.errorType }}' }),
        custom('assign', {}),
        script('for(;;){}', { timeout: 100, continueOnError: true }),
        ret('{{ [refused, assigned, lastError.code, lastError.path] }}'),
      ],
    });
    expect(result(outcome)).toEqual(['TypeError', true, 'TIMEOUT', 'functions[3]']);
  });

  test('the session refuses user-code requests outside an async segment, with arguments of the wrong types, and while user code runs', async () => {
    const module = await acquireModule(64 * 1024 * 1024);
    const asked: unknown[][] = [];
    let release!: () => void;
    const session = openSession({
      module,
      runDeadline: performance.now() + 5000,
      memoryBytes: 48 * 1024 * 1024,
      code: async (id, iteration) => {
        asked.push([id, iteration]);
        // Meanwhile, a second request of the same program is refused.
        await new Promise<void>((resolve) => (release = resolve));
        return '[1,2]';
      },
      // A program of the engine's shape, written here to call HQ the way a tampered one could.
      program:
        "api.run=function(){try{HQ(3,1,0);return'called'}catch(e){return e.message}};" +
        "api.go=async function(){var r=[],t=[[3,'1',0],[3,1,'0'],[3,1]];for(var i=0;i<t.length;i++){try{await HQ.apply(null,t[i]);r.push('called')}catch(e){r.push(e.message)}}" +
        'var a=HQ(3,4,-1),b;try{await HQ(3,5,0)}catch(e){b=e.message}r.push(b,J.parse(await a));st.last=r};',
    });
    try {
      expect(session.string('run')).toBe('Invalid host request');
      const going = session.settleProgram('go');
      await new Promise((resolve) => setTimeout(resolve, 20));
      release();
      await going;
      expect(JSON.parse(session.string('finish', 10_000))).toEqual([
        'Invalid host request',
        'Invalid host request',
        'Invalid host request',
        'Invalid host request',
        [1, 2],
      ]);
      expect(asked).toEqual([[4, -1]]);
    } finally {
      session.close();
      releaseModule(module);
    }
  });
  test('the runner refuses a user-code request for a node its plan did not compile as user code', () => {
    const functions: PipelineNode[] = [
      set({ a: 1 }),
      { functionPackage: F('read-datasource'), settings: { dataSourceId: 1 } },
      script('return 1'),
      custom('double', { n: 1 }),
      { type: 'loop', range: { from: 0, to: 0 }, functions: [custom('gone')] },
    ];
    const indexes = new Map(collectExpressions(functions).map((e, i) => [e, i]));
    const plan = planPipeline(functions, (e) => indexes.get(e)!, 100);
    const customs = new Map([['com.acme.function.double', {}]]);
    expect(userCodeNode(plan, 2, customs).code).toEqual({ kind: 'script', source: 'return 1' });
    expect(userCodeNode(plan, 3, customs).code).toEqual({ kind: 'custom' });
    // A set node, a built-in, a loop, a custom function the run does not have, no node, not an index.
    for (const id of [0, 1, 4, 5, 6, -1, 2.5, Number.NaN])
      expect(() => userCodeNode(plan, id, customs)).toThrow('The sandbox asked for user code that is not in the program');
  });
});

test('after an await, a loop whose body awaits nothing is checked once before it, and its timeout still ends a spin', async () => {
  const loopOf = (functions: PipelineNode[], extra: Partial<PipelineNode> = {}): PipelineNode =>
    ({ type: 'loop', range: { from: 1, to: 3 }, functions, ...extra }) as PipelineNode;
  const functions: PipelineNode[] = [
    script('return { n: 1 }'),
    loopOf([{ type: 'if', conditions: [{ condition: 'currentItem > 1', functions: [set({ x: '{{ currentItem }}' })] }] }]),
    loopOf([script('return 1')]),
  ];
  const indexes = new Map(collectExpressions(functions).map((e, i) => [e, i]));
  const plan = planPipeline(functions, (e) => indexes.get(e)!, 100);
  expect(plan.async).toBe(true);
  // Before the script, before each loop, and per iteration of the loop that awaits and before its script; none per
  // iteration of the first loop nor before its if and set (time passes there only as guest code the interrupt handler bounds).
  expect(plan.source.split('if(NOW()>=HD-1)HQ(1);').length - 1).toBe(5);

  // A spin in such a loop after an await meets the loop's timeout (the interrupt handler), and the run goes on.
  const spin = '{{ (() => { for (;;) {} })() }}';
  const outcome = await runWith(
    {
      environment: 'client',
      customFunctions,
      limits: { runTimeoutMs: 20_000 },
      services: createFakeServices().services,
      functions: [
        script('await null; return { n: 1 }'),
        loopOf([set({ x: spin })], { timeout: 100, continueOnError: true }),
        loopOf([set({ y: '{{ currentItem }}' })]),
        ret('{{ [n, y, lastError.code, lastError.errorMessage] }}'),
      ],
    },
    hooks,
  );
  expect(result(outcome)).toEqual([1, 3, 'TIMEOUT', 'The function exceeded its timeout']);
  expect(outcome.trace.filter((t) => t.outcome === 'failed').map((t) => [t.path, t.iteration])).toEqual([
    ['functions[1].functions[0]', 0],
    ['functions[1]', undefined],
  ]);
});

test('compiled user code, its failures, timeouts and guards leave no handle alive (debug build)', async () => {
  const pipelines: PipelineNode[][] = [
    [{ type: 'loop', range: { from: 0, to: 3 }, functions: [custom('count', { source: 1 }), script('console.log(1); return { x: 1 }')] }],
    [custom('fail', { n: 1 })],
    [script('throw 1', { retry: { attempts: 3 }, continueOnError: true }), custom('never', {}, { continueOnError: true })],
    [custom('count', { source: 'hang' }, { timeout: 50, continueOnError: true }), script('for(;;){}', { timeout: 50, continueOnError: true })],
    [custom('count', { source: 'hang' }, { timeout: 50 })],
  ];
  await expectNoLeaks(pipelines, {
    environment: 'client',
    services: createFakeServices().services,
    customFunctions,
    limits: { maxTraceEntries: 3, runTimeoutMs: 20_000 },
  });
});
