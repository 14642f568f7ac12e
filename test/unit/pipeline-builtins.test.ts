import { describe, expect, test } from 'vitest';
import { runPipeline } from '../../src/pipeline/index.js';
import { expectNoLeaks } from '../helpers/leak-check.js';
import { withoutTimes } from '../helpers/pipeline-outcome.js';
import { collectExpressions, planPipeline } from '../../src/pipeline/inline.js';
import { acquireModule, releaseModule } from '../../src/sandbox/pool.js';
import { openSession } from '../../src/sandbox/session.js';
import type { HostServices, InPageCode, InPageFunction, PipelineNode, RunOutcome, RunPipelineOptions } from '../../src/contract/pipeline.js';
import { createFakeServices } from '../browser/pipeline-page/cases.mjs';

/**
 * Host built-ins (read-datasource, insert-entry…) compiled into the program as awaited host requests
 * (src/pipeline/inline.ts `HB`, `WA`; src/pipeline/protocol.ts). Every pipeline runs with its own fresh fake
 * services; its result, error, trace (times aside) and the host calls made must equal the recorded ones (the
 * snapshots: what the host walker, the engine's former second path and its oracle until it was deleted, gave).
 */
const F = (name: string) => `com.client.function.${name}`;
const read = (settings: Record<string, unknown>, extra: Partial<PipelineNode> = {}): PipelineNode =>
  ({ functionPackage: F('read-datasource'), settings, ...extra }) as PipelineNode;
const set = (settings: Record<string, unknown>, extra: Partial<PipelineNode> = {}): PipelineNode =>
  ({ functionPackage: F('set'), settings, ...extra }) as PipelineNode;
const ret = (value: unknown): PipelineNode => ({ functionPackage: F('return'), settings: { value } });

const strip = withoutTimes;

type Options = Omit<RunPipelineOptions, 'services' | 'environment'>;

/** Fake services whose `find` on data source 7 fails the first `failures` times (then reads data source 1). */
function flaky(failures: number): { services: HostServices; calls: unknown[][] } {
  const fake = createFakeServices();
  let left = failures;
  const connect = fake.services.dataSources.connect.bind(fake.services.dataSources);
  return {
    calls: fake.calls,
    services: {
      ...fake.services,
      dataSources: {
        connect(idOrName) {
          if (idOrName !== 7) return connect(idOrName);
          const c = connect(1);
          return {
            ...c,
            find: async (q?: unknown) => {
              fake.calls.push(['flaky.find', left]);
              if (left-- > 0) throw Object.assign(new Error(`flaky ${left + 1}`), { name: 'ApiError', code: 'UNAVAILABLE' });
              return c.find(q as never);
            },
          };
        },
      },
    },
  };
}

/** Whether the pipeline's top-level list is (or contains) an async segment: the compiled path is really taken. */
function compiledAsync(functions: PipelineNode[]): boolean {
  const indexes = new Map(collectExpressions(functions).map((e, i) => [e, i]));
  return planPipeline(functions, (e) => indexes.get(e)!, 10_000).async;
}

/** Runs the pipeline; its outcome and host calls must equal the recorded ones. Returns them. */
async function compare(options: Options, services = () => createFakeServices(), environment: 'client' | 'server' = 'client') {
  expect(compiledAsync(options.functions)).toBe(true);
  const compiled = services();
  const inline = await runPipeline({ environment, ...options, services: compiled.services });
  expect(strip(inline)).toMatchSnapshot();
  expect(compiled.calls).toMatchSnapshot();
  return { outcome: inline, calls: compiled.calls };
}

const outcomes = (o: RunOutcome) => o.trace.map((t) => [t.path, t.outcome, t.iteration, t.retries]);

describe('host built-ins compiled as awaited host requests agree with the walker', () => {
  test('built-ins nested in loops, ifs and nested functions, gated, with their inputs and outputs traced', async () => {
    const { outcome, calls } = await compare({
      payload: { names: ['Ann', 'Bob', 'Cy'] },
      functions: [
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
                    {
                      functionPackage: F('insert-entry'),
                      settings: { dataSourceName: 'people', data: { name: '{{ currentItem }}', at: '{{ currentIndex }}' } },
                      functions: [set({ last: '{{ entry.id }}' })],
                    },
                  ],
                },
              ],
              elseFunctions: [read({ dataSourceId: 1, where: { name: 'Linus' }, condition: '{{ currentIndex > 5 }}' })],
            },
          ],
        },
        read({ dataSourceId: 1, limit: '{{ last }}' }),
        { functionPackage: F('send-notification'), settings: { data: { title: 'n={{ records.length }}' } } },
        ret('{{ [last, records.length, notification.data.title, typeof currentItem] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual([11, 4, 'n=4', 'undefined']);
    expect(calls.map((c) => c[0])).toEqual(['dataSources.insert', 'dataSources.insert', 'dataSources.find', 'notifications.create']);
    const insert = outcome.trace.find((t) => t.package === F('insert-entry'))!;
    expect([insert.input, insert.output]).toEqual([
      { dataSourceName: 'people', data: { name: 'Ann', at: 0 } },
      { entry: { id: 10, data: { name: 'Ann', at: 0 } } },
    ]);
    expect(outcome.trace.find((t) => t.outcome === 'skipped')?.path).toBe('functions[0].functions[0].elseFunctions[0]');
  });

  test('a failing built-in deep in loops and ifs traces its input, the node and each ancestor with its iteration', async () => {
    const { outcome } = await compare({
      functions: [
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          functions: [{ type: 'if', conditions: [{ condition: 'currentItem === 2', functions: [read({ dataSourceId: '{{ 400 + currentItem }}' })] }] }],
        },
      ],
    });
    expect(!outcome.ok && [outcome.error.code, outcome.error.errorType]).toEqual(['FUNCTION_FAILED', 'ApiError']);
    const failed = outcome.trace.filter((t) => t.outcome === 'failed');
    expect(failed.map((t) => [t.path, t.iteration, t.input])).toEqual([
      ['functions[0].functions[0].conditions[0].functions[0]', 1, { dataSourceId: 402 }],
      ['functions[0].functions[0]', 1, undefined],
      ['functions[0]', undefined, undefined],
    ]);
  });

  test('settings the built-in refuses, settings and results over the size limit', async () => {
    await compare({ functions: [{ functionPackage: F('update-entry'), settings: { dataSourceId: 1, id: 'x', data: {} } }] });
    await compare({ limits: { resultBytes: 100 }, functions: [read({ dataSourceId: 1, where: { name: '{{ "x".repeat(200) }}' } })] });
    const { outcome } = await compare({ limits: { resultBytes: 60 }, functions: [read({ dataSourceId: 1 })] });
    expect(!outcome.ok && outcome.error.errorType).toBe('ResultTooLargeError');
  });

  test('continueOnError: every failing iteration is traced, lastError set, the loop goes on', async () => {
    const { outcome } = await compare({
      functions: [
        set({ n: 0 }),
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          functions: [read({ dataSourceId: '{{ currentItem === 2 ? 1 : 404 }}' }, { continueOnError: true }), set({ n: '{{ n + 1 }}' })],
        },
        ret('{{ [n, lastError.code, lastError.path, records.length] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual([3, 'FUNCTION_FAILED', 'functions[1].functions[0]', 2]);
  });

  test('retry without delay: failed attempts traced as retried with their input, the success carries the count', async () => {
    const { outcome } = await compare({ functions: [read({ dataSourceId: 7 }, { retry: { attempts: 3 } }), ret('{{ records.length }}')] }, () => flaky(2));
    expect(outcome.ok && outcome.result).toBe(2);
    expect(outcomes(outcome)).toEqual([
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'ok', undefined, 2],
      ['functions[1]', 'ok', undefined, undefined],
    ]);
    expect(outcome.trace[0]!.input).toEqual({ dataSourceId: 7 });
  });

  test('retry exhausted: the run fails, or goes on with continueOnError; inside a loop, each iteration retries', async () => {
    const failedRun = await compare({ functions: [read({ dataSourceId: 7 }, { retry: { attempts: 2 } })] }, () => flaky(5));
    expect(!failedRun.outcome.ok && failedRun.outcome.error.errorMessage).toBe('UNAVAILABLE: flaky 4');
    const { outcome } = await compare(
      {
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 2 },
            functions: [read({ dataSourceId: 7 }, { retry: { attempts: 2 }, continueOnError: true, functions: [set({ got: '{{ currentItem }}' })] })],
          },
          ret('{{ [got, lastError.errorMessage] }}'),
        ],
      },
      () => flaky(3),
    );
    expect(outcome.ok && outcome.result).toEqual([2, 'UNAVAILABLE: flaky 2']);
  });

  test('a node timeout while the host never answers fails the node; the run fails, or goes on with continueOnError', async () => {
    const alone = await compare({ limits: { runTimeoutMs: 20_000 }, functions: [read({ dataSourceName: 'hang' }, { timeout: 100 })] });
    expect(!alone.outcome.ok && [alone.outcome.error.code, alone.outcome.error.errorMessage]).toEqual(['TIMEOUT', 'The function exceeded its timeout']);
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        read({ dataSourceName: 'hang', where: { a: 1 } }, { timeout: 100, retry: { attempts: 2 }, continueOnError: true }),
        read({ dataSourceId: 1 }, { timeout: 5000 }),
        ret('{{ [lastError.code, records.length] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual(['TIMEOUT', 2]);
    expect(outcomes(outcome).slice(0, 2)).toEqual([
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'failed', undefined, 1],
    ]);
    expect(outcome.trace[1]!.input).toEqual({ dataSourceName: 'hang', where: { a: 1 } });
  });

  test('a loop timeout ends the loop while a guarded built-in awaits: the built-in fails, and so does the loop', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 3 },
          timeout: 150,
          continueOnError: true,
          functions: [read({ dataSourceName: 'hang' }, { continueOnError: true }), set({ after: '{{ currentItem }}' })],
        },
        ret('{{ [typeof after, lastError.path] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual(['undefined', 'functions[0]']);
    expect(outcomes(outcome)).toEqual([
      ['functions[0].functions[0]', 'failed', 0, undefined],
      ['functions[0]', 'failed', undefined, undefined],
      ['functions[1]', 'ok', undefined, undefined],
    ]);
  });

  test('settings that spin past a built-in timeout are interrupted; continueOnError lets the run go on', async () => {
    const { outcome, calls } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        read({ dataSourceId: '{{ (() => { for (;;) {} })() }}' }, { timeout: 100, continueOnError: true }),
        read({ dataSourceId: 1 }),
        ret('{{ [lastError.code, lastError.errorMessage, records.length] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual(['TIMEOUT', 'The function exceeded its timeout', 2]);
    expect(calls.length).toBe(1);
  });

  test('the run timeout while awaiting the host is not caught by continueOnError or retry', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 300 },
      functions: [read({ dataSourceName: 'hang' }, { continueOnError: true, retry: { attempts: 3 } }), ret('unreachable')],
    });
    expect(!outcome.ok && [outcome.error.code, outcome.error.errorMessage]).toEqual(['TIMEOUT', 'The run exceeded its time limit']);
    expect(outcomes(outcome)).toEqual([['functions[0]', 'failed', undefined, undefined]]);
  });

  test('cancelling the run while the host works ends it with ABORTED', async () => {
    const run = async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      const options: RunPipelineOptions = {
        environment: 'client',
        services: createFakeServices().services,
        signal: controller.signal,
        functions: [read({ dataSourceName: 'hang' }, { continueOnError: true })],
      };
      return strip(await runPipeline(options));
    };
    const compiled = await run();
    expect(compiled).toMatchSnapshot();
    expect(!compiled.ok && compiled.error.code).toBe('ABORTED');
  });

  test('a built-in beside a script node and a host-walked retry that waits: segments on both sides of them', async () => {
    const { outcome } = await compare(
      {
        functions: [
          read({ dataSourceId: 1 }),
          { functionPackage: F('script'), settings: { code: 'return { n: context.records.length + 1 }' } },
          read({ dataSourceId: 7 }, { retry: { attempts: 2, delayMs: 5 } }),
          { functionPackage: F('insert-entry'), settings: { dataSourceId: 1, data: { n: '{{ n }}' } } },
          ret('{{ [n, entry.id] }}'),
        ],
      },
      () => flaky(1),
    );
    expect(outcome.ok && outcome.result).toEqual([3, 10]);
  });

  test('in page mode, built-ins compile the same way around page functions', async () => {
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => InPageFunction;
    const inPage: InPageCode = {
      script: (_path, code) => new AsyncFunction('settings', 'context', 'Client', 'currentItem', 'currentIndex', code),
      custom: () => undefined,
    };
    const { outcome } = await compare({
      inPage,
      functions: [
        {
          type: 'loop',
          range: { from: 1, to: 2 },
          functions: [
            read({ dataSourceId: 1, limit: '{{ currentItem }}' }),
            { functionPackage: F('script'), settings: { code: 'context.total = (context.total || 0) + context.records.length' } },
            read({ dataSourceName: 'hang' }, { timeout: 80, continueOnError: true }),
          ],
        },
        ret('{{ [total, lastError.code] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual([3, 'TIMEOUT']);
  });

  test('http-request on the server is compiled too', async () => {
    const fake = () => {
      const f = createFakeServices();
      const http = async (request: { url: string }) => {
        f.calls.push(['http', request.url]);
        return { status: 200, headers: {}, body: { ok: true } };
      };
      return { calls: f.calls, services: { ...f.services, http } as HostServices };
    };
    const { outcome } = await compare(
      { functions: [{ functionPackage: F('http-request'), settings: { url: 'https://example.com/{{ 1 + 1 }}' } }, ret('{{ response.body }}')] },
      fake,
      'server',
    );
    expect(outcome.ok && outcome.result).toEqual({ ok: true });
  });
});

describe('where awaiting nodes are planned', () => {
  const plan = (functions: PipelineNode[]) => {
    const indexes = new Map(collectExpressions(functions).map((e, i) => [e, i]));
    return planPipeline(functions, (e) => indexes.get(e)!, 100);
  };

  test('a timed or guarded loop or if around a built-in is compiled (a guarded one under WA)', () => {
    const timed = plan([
      { type: 'loop', range: { from: 0, to: 1 }, timeout: 50, functions: [read({ dataSourceId: 1 })] },
      { type: 'if', timeout: 50, conditions: [{ condition: 'true', functions: [read({ dataSourceId: 1 })] }] },
    ]);
    expect(timed.async).toBe(true);
    const guarded = plan([
      set({ a: 1 }),
      { type: 'loop', range: { from: 0, to: 1 }, continueOnError: true, functions: [read({ dataSourceId: 1 }), set({ b: 1 })] },
      { type: 'if', continueOnError: true, conditions: [{ condition: 'true', functions: [set({ c: 1 })] }] },
    ]);
    expect(guarded.async).toBe(true);
    expect(guarded.nodes.filter((n) => n.guard).map((n) => n.path)).toEqual(['functions[1]', 'functions[2]']);
    // A function node's guard covers its own work: its nested built-ins are compiled under it.
    const parent = plan([set({ a: 1 }, { continueOnError: true, functions: [read({ dataSourceId: 1 })] })]);
    expect(parent.async).toBe(true);
  });

  test('a guarded loop and if around built-ins: failures caught, traced and recovered as in the walker', async () => {
    const { outcome } = await compare({
      functions: [
        set({ n: 0 }),
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          continueOnError: true,
          functions: [set({ n: '{{ n + 1 }}' }), read({ dataSourceId: '{{ currentItem === 2 ? 404 : 1 }}' })],
        },
        {
          type: 'if',
          continueOnError: true,
          conditions: [{ condition: 'n === 2', functions: [read({ dataSourceName: 'hang' }, { timeout: 80 }), set({ never: true })] }],
        },
        ret('{{ [n, typeof currentItem, lastError.path, lastError.code, typeof never] }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toEqual([2, 'undefined', 'functions[2]', 'TIMEOUT', 'undefined']);
  });

  test('a timed loop around a built-in that never answers fails with the loop, as in the walker', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [{ type: 'loop', range: { from: 0, to: 3 }, timeout: 100, functions: [read({ dataSourceId: 1 }), read({ dataSourceName: 'hang' })] }],
    });
    expect(!outcome.ok && [outcome.error.code, outcome.error.errorMessage]).toEqual(['TIMEOUT', 'The function exceeded its timeout']);
    expect(outcomes(outcome).slice(-2)).toEqual([
      ['functions[0].functions[1]', 'failed', 0, undefined],
      ['functions[0]', 'failed', undefined, undefined],
    ]);
  });
});

describe("a retry that waits: the guest awaits the host's sleep, as the walker waits", () => {
  test('an expression-only node retried with a constant wait: retried entries, then the success with its count', async () => {
    const started = Date.now();
    const { outcome } = await compare({
      payload: { n: 0 },
      functions: [set({ x: '{{ (context.n = n + 1) < 3 ? nope : n }}' }, { retry: { attempts: 3, delayMs: 40 } }), ret('{{ [x, n] }}')],
    });
    expect(outcome.ok && outcome.result).toEqual([3, 3]);
    expect(outcomes(outcome)).toEqual([
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'retried', undefined, undefined],
      ['functions[0]', 'ok', undefined, 2],
      ['functions[1]', 'ok', undefined, undefined],
    ]);
    // The run waited twice 40 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(80);
    expect((outcome.trace[2]!.startMs ?? 0) - (outcome.trace[0]!.startMs ?? 0)).toBeGreaterThanOrEqual(75);
  });

  test('a built-in retried with an exponential wait inside a loop, exhausted with continueOnError', async () => {
    const { outcome } = await compare(
      {
        functions: [
          {
            type: 'loop',
            range: { from: 0, to: 1 },
            functions: [read({ dataSourceId: 7 }, { retry: { attempts: 3, delayMs: 5, backoff: 'exponential' }, continueOnError: true })],
          },
          ret('{{ [records.length, lastError.errorMessage] }}'),
        ],
      },
      () => flaky(4),
    );
    expect(outcome.ok && outcome.result).toEqual([2, 'UNAVAILABLE: flaky 2']);
    expect(outcomes(outcome).map((e) => e[1])).toEqual(['retried', 'retried', 'failed', 'retried', 'ok', 'ok', 'ok']);
  });

  test('a wait is cut at the deadline around the node; the next attempt then fails at once, as in the walker', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        {
          type: 'loop',
          range: { from: 0, to: 2 },
          timeout: 150,
          continueOnError: true,
          functions: [set({ x: '{{ nope }}' }, { retry: { attempts: 3, delayMs: 5000 } })],
        },
        ret('{{ lastError.code }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toBe('TIMEOUT');
    expect(outcomes(outcome)).toEqual([
      ['functions[0].functions[0]', 'retried', 0, undefined],
      ['functions[0].functions[0]', 'retried', 0, undefined],
      ['functions[0].functions[0]', 'failed', 0, 2],
      ['functions[0]', 'failed', undefined, undefined],
      ['functions[1]', 'ok', undefined, undefined],
    ]);
    expect(outcome.durationMs).toBeLessThan(3000);
  });

  test('cancelling the run during a wait ends it with ABORTED, the waiting node not traced again', async () => {
    const run = async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 150);
      const options: RunPipelineOptions = {
        environment: 'client',
        services: createFakeServices().services,
        signal: controller.signal,
        functions: [
          { type: 'loop', range: { from: 0, to: 0 }, functions: [set({ x: '{{ nope }}' }, { retry: { attempts: 2, delayMs: 5000 }, continueOnError: true })] },
        ],
      };
      return strip(await runPipeline(options));
    };
    const compiled = await run();
    expect(compiled).toMatchSnapshot();
    expect(!compiled.ok && compiled.error.code).toBe('ABORTED');
    expect(outcomes(compiled as RunOutcome)).toEqual([
      ['functions[0].functions[0]', 'retried', 0, undefined],
      ['functions[0]', 'failed', undefined, undefined],
    ]);
  });
});

describe('what the guest cannot bend, for built-in requests', () => {
  test('expressions cannot reach the host functions of the program', async () => {
    const { outcome } = await compare({ functions: [read({ dataSourceId: 1 }), ret('{{ [typeof HQ, typeof GH, typeof DLH, typeof HB] }}')] });
    expect(outcome.ok && outcome.result).toEqual(['undefined', 'undefined', 'undefined', 'undefined']);
  });

  test('an endless chain of promise jobs an expression starts does not stall the program (the walker never runs it)', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 5000 },
      functions: [
        set({ x: '{{ (function spin() { Promise.resolve().then(spin) })(), 1 }}' }),
        { type: 'loop', range: { from: 1, to: 3 }, functions: [read({ dataSourceId: 1, limit: '{{ currentItem }}' })] },
        ret('{{ records.length }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toBe(2);
  });

  test('the session refuses host requests outside an async segment, of unknown kinds or with arguments of the wrong types', async () => {
    const module = await acquireModule(64 * 1024 * 1024);
    const asked: unknown[][] = [];
    const session = openSession({
      module,
      runDeadline: performance.now() + 5000,
      memoryBytes: 48 * 1024 * 1024,
      builtin: async (id, settings) => {
        asked.push([id, settings]);
        return '{"ok":true}';
      },
      // A program of the engine's shape, written here to call HQ the way a tampered one could.
      program:
        "api.run=function(){try{HQ(0,1,'{}');return'called'}catch(e){return e.message}};" +
        "api.go=async function(){var r=[],t=[[0,'1','{}'],[0,1,5],[7,1,'{}'],[0,1],[2,1,'x'],[]];for(var i=0;i<t.length;i++){try{await HQ.apply(null,t[i]);r.push('called')}catch(e){r.push(e.message)}}r.push(J.parse(await HQ(0,2,'{\"a\":1}')));st.last=r};",
    });
    try {
      expect(session.string('run')).toBe('Invalid host request');
      await session.settleProgram('go');
      expect(JSON.parse(session.string('finish', 10_000))).toEqual([
        'Invalid host request',
        'Invalid host request',
        'Invalid host request',
        'Invalid host request',
        'Invalid host request',
        'Invalid host request',
        { ok: true },
      ]);
      expect(asked).toEqual([[2, '{"a":1}']]);
    } finally {
      session.close();
      releaseModule(module);
    }
  });

  test("a program whose host call never answers ends at the run's deadline even when its timer fires early", async () => {
    // A timer's delay counts from the event loop's clock, read once per turn: after a long turn it fires early. Here
    // the session's clock runs at half speed, so every timer fires before the deadline it was set for.
    const module = await acquireModule(64 * 1024 * 1024);
    const origin = performance.now();
    const now = () => origin + (performance.now() - origin) / 2;
    const session = openSession({
      module,
      now,
      runDeadline: now() + 100,
      memoryBytes: 48 * 1024 * 1024,
      builtin: () => new Promise<string>(() => {}),
      program: "api.go=async function(){await HQ(0,1,'{}')};",
    });
    try {
      const error = await session.settleProgram('go').then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      expect(error?.code).toBe('TIMEOUT');
      expect(performance.now() - origin).toBeLessThan(5000);
    } finally {
      session.close();
      releaseModule(module);
    }
  });

  test('patched Date.now, Array.prototype.pop and Promise.prototype.then move no deadline of an awaited node', async () => {
    const { outcome } = await compare({
      limits: { runTimeoutMs: 20_000 },
      functions: [
        set({ x: '{{ (Date.now = () => 0, Array.prototype.pop = () => 0, Promise.prototype.then = function () { return this }, 1) }}' }),
        read({ dataSourceName: 'hang' }, { timeout: 100, continueOnError: true }),
        ret('{{ lastError.code }}'),
      ],
    });
    expect(outcome.ok && outcome.result).toBe('TIMEOUT');
  });

  test('a patched JSON.stringify cannot send the host anything but JSON text: the request is refused', async () => {
    const { services, calls } = createFakeServices();
    const o = await runPipeline({
      environment: 'client',
      services,
      functions: [
        set({ x: '{{ (JSON.stringify = ((s) => (v, ...a) => (v && v.dataSourceId === 1 && !Array.isArray(v) ? 42 : s(v, ...a)))(JSON.stringify), 1) }}' }),
        read({ dataSourceId: 1 }),
      ],
    });
    expect(!o.ok && [o.error.code, o.error.errorType, o.error.errorMessage]).toEqual(['FUNCTION_FAILED', 'TypeError', 'Invalid host request']);
    expect(calls).toEqual([]);
  });
});

test('awaited built-ins, their failures, timeouts and guards leave no handle alive (debug build)', async () => {
  const pipelines: PipelineNode[][] = [
    [{ type: 'loop', range: { from: 0, to: 3 }, functions: [read({ dataSourceId: 1 })] }, ret('{{ records.length }}')],
    [read({ dataSourceId: 404 })],
    [read({ dataSourceId: 7 }, { retry: { attempts: 3 }, continueOnError: true }), read({ dataSourceId: 404 }, { continueOnError: true })],
    [read({ dataSourceName: 'hang' }, { timeout: 50, continueOnError: true }), read({ dataSourceName: 'hang' }, { timeout: 50 })],
    [read({ dataSourceId: '{{ (() => { for (;;) {} })() }}' }, { timeout: 50, continueOnError: true })],
  ];
  await expectNoLeaks(pipelines, { environment: 'client', services: flaky(2).services, limits: { maxTraceEntries: 3, runTimeoutMs: 20_000 } });
});
