// Pipeline cases shared by the Node suite (test/unit/pipeline-cases.test.ts) and the
// Chromium suite (test/browser/pipeline.test.ts, run in the Web Worker). Each case has
// the run options (without services) and a check(outcome, calls) that throws on a mismatch.

/** In-memory host services recording every call; data source 1 is "people". */
export function createFakeServices() {
  const calls = [];
  const tables = {
    1: [
      { id: 1, data: { name: 'Ada', age: 36 } },
      { id: 2, data: { name: 'Linus', age: 28 } },
    ],
  };
  let nextId = 10;
  const table = (idOrName) => {
    const id = idOrName === 'people' ? 1 : idOrName;
    if (id === 'hang') return null;
    if (!tables[id]) {
      const error = new Error(`Data source ${idOrName} not found`);
      error.name = 'ApiError';
      error.code = 'DATA_SOURCE_NOT_FOUND';
      error.status = 404;
      throw error;
    }
    return tables[id];
  };
  const services = {
    dataSources: {
      connect(idOrName) {
        const record =
          (method) =>
          (...args) => {
            calls.push([`dataSources.${method}`, idOrName, ...args]);
            if (idOrName === 'hang') return new Promise(() => {});
            return Promise.resolve().then(() => impl[method](...args));
          };
        const impl = {
          find: (q = {}) =>
            table(idOrName)
              .filter((e) => !q.where || Object.entries(q.where).every(([k, v]) => e.data[k] === v))
              .slice(q.offset ?? 0, (q.offset ?? 0) + (q.limit ?? 1000)),
          findOne: () => table(idOrName)[0] ?? null,
          findById: (id) => table(idOrName).find((e) => e.id === id) ?? null,
          insert: (data) => {
            const entry = { id: nextId++, data };
            table(idOrName).push(entry);
            return entry;
          },
          update: (id, data) => {
            const entry = table(idOrName).find((e) => e.id === id);
            if (!entry) throw Object.assign(new Error(`Entry ${id} not found`), { name: 'ApiError', code: 'ENTRY_NOT_FOUND' });
            entry.data = { ...entry.data, ...data };
            return entry;
          },
          removeById: (id) => {
            const list = table(idOrName);
            list.splice(
              list.findIndex((e) => e.id === id),
              1,
            );
            return {};
          },
          query: (body) => ({ entries: table(idOrName), body }),
          commit: (body) => ({ committed: body }),
        };
        return Object.fromEntries(Object.keys(impl).map((m) => [m, record(m)]));
      },
    },
    notifications: {
      create(input) {
        calls.push(['notifications.create', input]);
        return Promise.resolve({ id: 1, ...input });
      },
    },
  };
  return { services, calls };
}

const F = (name) => `com.client.function.${name}`;
const set = (settings, extra = {}) => ({ functionPackage: F('set'), settings, ...extra });
const ret = (value) => ({ functionPackage: F('return'), settings: { value } });
const script = (code, extra = {}) => ({ functionPackage: F('script'), settings: { code }, ...extra });

function fail(message) {
  throw new Error(message);
}
const json = (v) => JSON.stringify(v);
function eq(actual, expected, label = 'value') {
  if (json(actual) !== json(expected)) fail(`${label}: expected ${json(expected)}, got ${json(actual)}`);
}
function ok(outcome, result) {
  if (!outcome.ok) fail(`expected success, got ${json(outcome.error)}`);
  if (arguments.length > 1) eq(outcome.result, result, 'result');
}
function failed(outcome, code, errorType) {
  if (outcome.ok) fail(`expected failure ${code}, got result ${json(outcome.result)}`);
  eq(outcome.error.code, code, 'error.code');
  if (errorType) eq(outcome.error.errorType, errorType, 'error.errorType');
  if (!Array.isArray(outcome.error.trace)) fail('error.trace is not an array');
}
const paths = (outcome, outcomeFilter) => outcome.trace.filter((t) => !outcomeFilter || t.outcome === outcomeFilter).map((t) => t.path);

export const cases = [
  {
    name: 'set assigns names and returns the assigned object (result rule: last function)',
    options: { payload: { n: 2 }, functions: [set({ a: '{{ n * 2 }}', b: 'x' })] },
    check: (o) => ok(o, { a: 4, b: 'x' }),
  },
  {
    name: 'templates: exact keeps the type, embedded interpolates, nested objects and arrays',
    options: {
      payload: { user: { name: 'Ada', tags: ['a', 'b'] }, n: 3, missing: null },
      functions: [
        set({
          exact: '{{ user.tags }}',
          text: 'Hi {{ user.name }}, you have {{ n }} items and {{ user.tags }} and {{ missing }}',
          nested: { list: ['{{ n + 1 }}', { deep: '{{ n > 2 }}' }, 'plain'], num: 5 },
          spaced: '  {{ n }}  ',
          obj: { a: 1 },
        }),
      ],
    },
    check: (o) =>
      ok(o, {
        exact: ['a', 'b'],
        text: 'Hi Ada, you have 3 items and ["a","b"] and ',
        nested: { list: [4, { deep: true }, 'plain'], num: 5 },
        spaced: 3,
        obj: { a: 1 },
      }),
  },
  {
    name: 'context: payload fields, trigger/log/event names, `context` and `payload` are in scope',
    options: {
      payload: { x: 1 },
      context: { trigger: 'manual', event: { type: 'analytics.event' } },
      functions: [ret('{{ [x, trigger, event.type, context.x, payload.x] }}')],
    },
    check: (o) => ok(o, [1, 'manual', 'analytics.event', 1, 1]),
  },
  {
    name: 'return ends the run with its value; later nodes do not run',
    options: { functions: [set({ a: 1 }), ret('{{ a + 1 }}'), set({ a: 99 })] },
    check: (o) => {
      ok(o, 2);
      eq(paths(o), ['functions[0]', 'functions[1]'], 'trace paths');
    },
  },
  {
    name: 'a function returning undefined (log) keeps the previous result',
    options: { functions: [set({ a: 1 }), { functionPackage: F('log'), settings: { message: 'a is {{ a }}' } }] },
    check: (o) => {
      ok(o, { a: 1 });
      eq(
        o.trace.filter((t) => t.outcome === 'log').map((t) => [t.path, t.message]),
        [['functions[1]', 'a is 1']],
        'log entries',
      );
    },
  },
  {
    name: 'an empty pipeline has an undefined result',
    options: { functions: [] },
    check: (o) => ok(o, undefined),
  },
  {
    name: 'nested functions run after their parent',
    options: { functions: [{ ...set({ a: 1 }), functions: [set({ b: '{{ a + 1 }}' }, { functions: [ret('{{ [a, b] }}')] })] }] },
    check: (o) => {
      ok(o, [1, 2]);
      eq(paths(o), ['functions[0]', 'functions[0].functions[0]', 'functions[0].functions[0].functions[0]'], 'paths');
    },
  },
  {
    name: 'gate: if with a false condition skips its nested functions, siblings go on (not a failure)',
    options: {
      payload: { n: 1 },
      functions: [
        { functionPackage: F('if'), settings: { condition: '{{ n > 5 }}' }, functions: [set({ big: true })] },
        { functionPackage: F('if'), settings: { condition: 'n === 1' }, functions: [set({ one: true })] },
        ret('{{ [typeof big, one] }}'),
      ],
    },
    check: (o) => {
      ok(o, ['undefined', true]);
      eq(
        o.trace.filter((t) => t.outcome === 'skipped').map((t) => t.path),
        ['functions[0]'],
        'skipped',
      );
    },
  },
  {
    name: 'any function with a false settings.condition is skipped',
    options: { functions: [set({ a: 1 }), set({ a: 2, condition: 'false' }), ret('{{ a }}')] },
    check: (o) => ok(o, 1),
  },
  {
    name: 'if node: the first true condition runs, else elseFunctions',
    options: {
      payload: { n: 7 },
      functions: [
        {
          type: 'if',
          conditions: [
            { condition: 'n < 5', functions: [set({ r: 'small' })] },
            { condition: '{{ n < 10 }}', functions: [set({ r: 'medium' })] },
            { condition: 'n < 100', functions: [set({ r: 'large' })] },
          ],
          elseFunctions: [set({ r: 'huge' })],
        },
        { type: 'if', conditions: [{ condition: 'n > 100', functions: [set({ s: 1 })] }], elseFunctions: [set({ s: 'else' })] },
        ret('{{ [r, s] }}'),
      ],
    },
    check: (o) => {
      ok(o, ['medium', 'else']);
      if (!paths(o).includes('functions[0].conditions[1].functions[0]')) fail('missing conditions[1] path');
      if (!paths(o).includes('functions[1].elseFunctions[0]')) fail('missing elseFunctions path');
    },
  },
  {
    name: 'loop over items with currentItem and currentIndex',
    options: {
      payload: { list: ['a', 'b', 'c'] },
      functions: [
        set({ out: [] }),
        {
          type: 'loop',
          items: 'list',
          functions: [script('context.out.push(currentIndex + ":" + currentItem)'), set({ last: '{{ currentIndex + "=" + currentItem }}' })],
        },
        ret('{{ [out, last] }}'),
      ],
    },
    check: (o) => {
      ok(o, [['0:a', '1:b', '2:c'], '2=c']);
      eq(
        o.trace.filter((t) => t.path === 'functions[1].functions[1]').map((t) => t.iteration),
        [0, 1, 2],
        'iterations',
      );
    },
  },
  {
    name: 'loop range is inclusive ({from: 0, to: 5} runs 6 times)',
    options: {
      functions: [set({ seen: '' }), { type: 'loop', range: { from: 0, to: 5 }, functions: [set({ seen: '{{ seen + currentItem }}' })] }, ret('{{ seen }}')],
    },
    check: (o) => ok(o, '012345'),
  },
  {
    name: 'loop range bounds may be expressions; to < from runs nothing',
    options: {
      payload: { n: 3 },
      functions: [
        set({ c: 0 }),
        { type: 'loop', range: { from: 1, to: '{{ n }}' }, functions: [set({ c: '{{ c + currentItem }}' })] },
        { type: 'loop', range: { from: 5, to: 1 }, functions: [set({ c: -1 })] },
        ret('{{ c }}'),
      ],
    },
    check: (o) => ok(o, 6),
  },
  {
    name: 'a missing or empty items array runs nothing',
    options: {
      payload: { empty: [] },
      functions: [
        set({ c: 0 }),
        { type: 'loop', items: 'nothing', functions: [set({ c: 1 })] },
        { type: 'loop', items: 'empty', functions: [set({ c: 2 })] },
        { type: 'loop', items: 'deep.missing.path', functions: [set({ c: 3 })] },
        ret('{{ c }}'),
      ],
    },
    check: (o) => ok(o, 0),
  },
  {
    name: 'nested loops restore the outer currentItem',
    options: {
      payload: { rows: [[1, 2], [3]] },
      functions: [
        set({ out: [] }),
        {
          type: 'loop',
          items: 'rows',
          functions: [
            {
              type: 'loop',
              items: 'currentItem',
              functions: [{ functionPackage: F('script'), settings: { code: 'context.out.push(settings.v)', v: '{{ currentItem * 10 }}' } }],
            },
            script('context.out.push("row" + currentIndex)'),
          ],
        },
        ret('{{ out }}'),
      ],
    },
    check: (o) => ok(o, [10, 20, 'row0', 30, 'row1']),
  },
  {
    name: 'loop items that are not an array fail with a clear error',
    options: { payload: { notArray: 5 }, functions: [{ type: 'loop', items: 'notArray', functions: [] }] },
    check: (o) => {
      failed(o, 'EXPRESSION_FAILED', 'TypeError');
      if (!o.error.errorMessage.includes('not an array')) fail(o.error.errorMessage);
    },
  },
  {
    name: 'script: async body with settings, context and Client; returned object merges into context',
    options: {
      payload: { base: 2 },
      functions: [
        {
          functionPackage: F('script'),
          settings: {
            code: 'const rows = await Client.DataSources.connect("people").find({ where: { age: 36 } }); return { found: rows.map(r => r.data.name), doubled: settings.x * 2 }',
            x: '{{ base }}',
          },
        },
        ret('{{ [found, doubled] }}'),
      ],
    },
    check: (o, calls) => {
      ok(o, [['Ada'], 4]);
      eq(calls[0], ['dataSources.find', 'people', { where: { age: 36 } }], 'bridge call');
    },
  },
  {
    name: 'built-ins: read-datasource, insert-entry, update-entry, delete-entry, send-notification',
    options: {
      functions: [
        { functionPackage: F('read-datasource'), settings: { dataSourceId: 1, where: { name: 'Linus' } } },
        { functionPackage: F('insert-entry'), settings: { dataSourceName: 'people', data: { name: '{{ records[0].data.name + "2" }}' } } },
        { functionPackage: F('update-entry'), settings: { dataSourceId: 1, id: '{{ entry.id }}', data: { age: 1 } } },
        { functionPackage: F('delete-entry'), settings: { dataSourceId: 1, id: 2 } },
        { functionPackage: F('send-notification'), settings: { data: { title: 'Hi {{ entry.data.name }}' }, status: 'published' } },
        ret('{{ [records.length, entry.data, notification.data.title, deleted.id] }}'),
      ],
    },
    check: (o, calls) => {
      ok(o, [1, { name: 'Linus2', age: 1 }, 'Hi Linus2', 2]);
      eq(
        calls.map((c) => c[0]),
        ['dataSources.find', 'dataSources.insert', 'dataSources.update', 'dataSources.removeById', 'notifications.create'],
        'calls',
      );
    },
  },
  {
    name: 'built-in settings are validated with a clear message',
    options: { functions: [{ functionPackage: F('insert-entry'), settings: { data: {} } }] },
    check: (o) => {
      failed(o, 'FUNCTION_FAILED', 'ValidationError');
      if (!o.error.errorMessage.includes('dataSourceId or settings.dataSourceName')) fail(o.error.errorMessage);
    },
  },
  {
    name: 'http-request is refused on the client before anything runs',
    options: { functions: [set({ a: 1 }), { functionPackage: F('http-request'), settings: { url: 'https://example.com' } }] },
    check: (o, calls) => {
      failed(o, 'FUNCTION_UNAVAILABLE', 'ValidationError');
      eq(o.trace, [], 'nothing ran');
    },
  },
  {
    name: 'custom functions run in the sandbox as (settings, context) => result',
    options: {
      payload: { n: 5 },
      customFunctions: [
        { package: 'com.acme.function.double', code: '(settings, context) => ({ doubled: settings.value * 2, seen: context.n })' },
        {
          package: 'com.acme.function.save',
          code: 'async function save(settings) { const e = await Client.DataSources.connect(1).insert({ v: settings.v }); return { saved: e.id } }',
        },
      ],
      functions: [
        { functionPackage: 'com.acme.function.double', settings: { value: '{{ n }}' } },
        { functionPackage: 'com.acme.function.save', settings: { v: '{{ doubled }}' } },
        ret('{{ [doubled, seen, typeof saved] }}'),
      ],
    },
    check: (o) => ok(o, [10, 5, 'number']),
  },
  {
    name: 'unknown function package fails before anything runs',
    options: { functions: [set({ a: 1 }), { functionPackage: 'com.nobody.function.nothing' }] },
    check: (o) => {
      failed(o, 'UNKNOWN_FUNCTION', 'ValidationError');
      if (!o.error.errorMessage.includes('functions[1]')) fail(o.error.errorMessage);
      eq(o.trace, [], 'nothing ran');
    },
  },
  {
    name: 'a failing node stops the run; the trace names its path and package',
    options: {
      functions: [set({ a: 1 }), { ...set({ b: 1 }), functions: [script('return 1'), script('throw new TypeError("boom " + context.a)')] }, set({ never: 1 })],
    },
    check: (o) => {
      failed(o, 'FUNCTION_FAILED', 'TypeError');
      eq(o.error.errorMessage, 'boom 1', 'message');
      const last = o.error.trace[o.error.trace.length - 1];
      eq([last.path, last.package, last.outcome], ['functions[1].functions[1]', F('script'), 'failed'], 'failing entry');
      if (!last.message.includes('boom 1')) fail('trace message');
      if (paths(o).includes('functions[2]')) fail('ran after failure');
    },
  },
  {
    name: 'an expression error names the expression',
    options: { functions: [set({ a: '{{ nope.x }}' })] },
    check: (o) => {
      failed(o, 'FUNCTION_FAILED', 'ReferenceError');
      eq(o.error.errorMessage, "'nope' is not defined (expression: nope.x)", 'message');
    },
  },
  {
    name: 'an expression error in a timed node names the variable and the expression too',
    options: { functions: [{ functionPackage: F('return'), settings: { value: "{{ event ? event.type : 'manual' }}" }, timeout: 5000 }] },
    check: (o) => {
      failed(o, 'FUNCTION_FAILED', 'ReferenceError');
      eq(o.error.errorMessage, "'event' is not defined (expression: event ? event.type : 'manual')", 'message');
    },
  },
  {
    name: 'an optional context field is tested through `context` (a manual run has no event)',
    options: { payload: { x: 1 }, functions: [ret("{{ [context.event ? context.event.type : 'manual', typeof event, Math.max(x, 2)] }}")] },
    check: (o) => ok(o, ['manual', 'undefined', 2]),
  },
  {
    name: 'a syntax error in an expression is reported as such',
    options: { functions: [set({ a: '{{ 1 + }}' })] },
    check: (o) => {
      failed(o, 'EXPRESSION_FAILED', 'SyntaxError');
      if (!o.error.errorMessage.includes('Invalid expression')) fail(o.error.errorMessage);
    },
  },
  {
    name: 'host errors reach the run as FUNCTION_FAILED with their code',
    options: { functions: [{ functionPackage: F('read-datasource'), settings: { dataSourceId: 404 } }] },
    check: (o) => {
      failed(o, 'FUNCTION_FAILED', 'ApiError');
      if (!o.error.errorMessage.includes('DATA_SOURCE_NOT_FOUND')) fail(o.error.errorMessage);
    },
  },
  {
    name: 'built-ins compiled into the program: continueOnError per item in a loop, lastError, the loop goes on',
    options: {
      functions: [
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          functions: [{ functionPackage: F('read-datasource'), settings: { dataSourceId: '{{ currentItem === 2 ? 1 : 404 }}' }, continueOnError: true }],
        },
        ret('{{ [records.length, lastError.code, lastError.path] }}'),
      ],
    },
    check: (o, calls) => {
      ok(o, [2, 'FUNCTION_FAILED', 'functions[0].functions[0]']);
      eq(paths(o, 'failed'), ['functions[0].functions[0]', 'functions[0].functions[0]'], 'failed entries');
      eq(calls.length, 3, 'calls');
    },
  },
  {
    name: 'built-in with a waiting retry: each failed attempt is traced, then the node fails',
    options: {
      functions: [{ functionPackage: F('read-datasource'), settings: { dataSourceId: 404 }, retry: { attempts: 3, delayMs: 20, backoff: 'exponential' } }],
    },
    check: (o, calls) => {
      failed(o, 'FUNCTION_FAILED', 'ApiError');
      eq(
        o.trace.map((t) => [t.outcome, t.retries]),
        [
          ['retried', undefined],
          ['retried', undefined],
          ['failed', 2],
        ],
        'attempts',
      );
      eq(calls.length, 3, 'calls');
      if (o.durationMs < 55) fail(`waited only ${o.durationMs} ms`);
    },
  },
  {
    name: 'built-in timeout on a never-settling host call with continueOnError: the run goes on',
    options: {
      limits: { runTimeoutMs: 10000 },
      functions: [
        { functionPackage: F('read-datasource'), settings: { dataSourceName: 'hang' }, timeout: 100, continueOnError: true },
        ret('{{ [lastError.code, lastError.errorMessage] }}'),
      ],
    },
    check: (o) => ok(o, ['TIMEOUT', 'The function exceeded its timeout']),
  },
  {
    name: 'continueOnError records the error, sets lastError and goes on',
    options: {
      functions: [script('throw new Error("first")', { continueOnError: true }), ret('{{ [lastError.errorMessage, lastError.path, lastError.errorType] }}')],
    },
    check: (o) => {
      ok(o, ['first', 'functions[0]', 'Error']);
      eq(
        o.trace.map((t) => t.outcome),
        ['failed', 'ok'],
        'outcomes',
      );
    },
  },
  {
    name: 'retry: attempts until success, with constant backoff',
    options: {
      functions: [
        set({ tries: 0 }),
        script('context.tries++; if (context.tries < 3) throw new Error("flaky " + context.tries); return { done: context.tries }', {
          retry: { attempts: 3, delayMs: 5 },
        }),
        ret('{{ done }}'),
      ],
    },
    check: (o) => {
      ok(o, 3);
      eq(
        o.trace.filter((t) => t.path === 'functions[1]').map((t) => t.outcome),
        ['retried', 'retried', 'ok'],
        'outcomes',
      );
    },
  },
  {
    name: 'retry: exhausted attempts fail the run with the last error',
    options: {
      functions: [
        set({ tries: 0 }),
        script('context.tries++; throw new Error("try " + context.tries)', { retry: { attempts: 2, backoff: 'exponential', delayMs: 1 } }),
      ],
    },
    check: (o) => {
      failed(o, 'FUNCTION_FAILED');
      eq(o.error.errorMessage, 'try 2', 'message');
    },
  },
  {
    name: 'per-node timeout on a never-settling host call fails that node with TimeoutError',
    options: { functions: [script('await Client.DataSources.connect("hang").find()', { timeout: 100 })] },
    check: (o) => {
      failed(o, 'TIMEOUT', 'TimeoutError');
      eq(o.error.errorMessage, 'The function exceeded its timeout', 'message');
    },
  },
  {
    name: 'per-node timeout with continueOnError: the run goes on',
    options: {
      limits: { runTimeoutMs: 10000 },
      functions: [script('while (true) {}', { timeout: 100, continueOnError: true }), ret('{{ lastError.errorType }}')],
    },
    check: (o) => ok(o, 'TimeoutError'),
  },
  {
    name: 'infinite loop → TIMEOUT',
    options: { limits: { runTimeoutMs: 300 }, functions: [script('while (true) {}')] },
    check: (o) => {
      failed(o, 'TIMEOUT', 'TimeoutError');
      if (o.durationMs > 3000) fail(`took ${o.durationMs} ms`);
    },
  },
  {
    name: 'infinite loop in an expression → TIMEOUT',
    options: { limits: { runTimeoutMs: 300 }, functions: [set({ a: '{{ (() => { for (;;) {} })() }}' })] },
    check: (o) => failed(o, 'TIMEOUT', 'TimeoutError'),
  },
  {
    name: 'a caught interrupt cannot keep the run alive',
    options: { limits: { runTimeoutMs: 300 }, functions: [script('for (;;) { try { while (true) {} } catch (e) {} }')] },
    check: (o) => failed(o, 'TIMEOUT', 'TimeoutError'),
  },
  {
    name: 'infinite microtask chain → TIMEOUT',
    options: { limits: { runTimeoutMs: 300 }, functions: [script('const spin = () => Promise.resolve().then(spin); spin(); for (;;) await null')] },
    check: (o) => failed(o, 'TIMEOUT', 'TimeoutError'),
  },
  {
    name: 'never-settling host promise in a script → TIMEOUT (run deadline)',
    options: { limits: { runTimeoutMs: 300 }, functions: [script('await Client.DataSources.connect("hang").find()')] },
    check: (o) => {
      failed(o, 'TIMEOUT', 'TimeoutError');
      eq(o.error.errorMessage, 'The run exceeded its time limit', 'message');
    },
  },
  {
    name: 'never-settling host promise in a built-in → TIMEOUT (run deadline)',
    options: { limits: { runTimeoutMs: 300 }, functions: [{ functionPackage: F('read-datasource'), settings: { dataSourceName: 'hang' } }] },
    check: (o) => failed(o, 'TIMEOUT', 'TimeoutError'),
  },
  {
    name: 'a guest promise that can never settle fails at once',
    options: { functions: [script('await new Promise(() => {})')] },
    check: (o) => failed(o, 'NEVER_SETTLES'),
  },
  {
    name: 'memory bomb of many small strings → OUT_OF_MEMORY',
    options: {
      limits: { memoryBytes: 32 * 1024 * 1024, runTimeoutMs: 20000 },
      functions: [script('const a = []; for (let i = 0; ; i++) a.push("item " + i)')],
    },
    check: (o) => failed(o, 'OUT_OF_MEMORY', 'OutOfMemoryError'),
  },
  {
    name: 'one huge allocation → OUT_OF_MEMORY',
    options: { limits: { memoryBytes: 32 * 1024 * 1024 }, functions: [script('return { s: "x".repeat(200 * 1024 * 1024).length }')] },
    check: (o) => failed(o, 'OUT_OF_MEMORY', 'OutOfMemoryError'),
  },
  {
    name: 'deep recursion → clean STACK_OVERFLOW error',
    options: { functions: [script('function f(n) { return f(n + 1) + 1 } return f(0)')] },
    check: (o) => failed(o, 'STACK_OVERFLOW', 'RangeError'),
  },
  {
    name: 'a run after an out-of-memory works normally',
    options: { functions: [ret('{{ 6 * 7 }}')] },
    check: (o) => ok(o, 42),
  },
  {
    name: 'oversized payload → PAYLOAD_TOO_LARGE before anything runs',
    options: { payload: { big: 'x'.repeat(2100) }, functions: [script('return 1')] },
    check: (o, calls) => {
      failed(o, 'PAYLOAD_TOO_LARGE');
      eq(o.trace, [], 'trace');
    },
  },
  {
    name: 'oversized result → RESULT_TOO_LARGE',
    options: { limits: { resultBytes: 1000 }, functions: [ret('{{ "é".repeat(600) }}')] },
    check: (o) => failed(o, 'RESULT_TOO_LARGE'),
  },
  {
    name: 'loop limit → LOOP_LIMIT',
    options: { limits: { maxLoopIterations: 10 }, functions: [{ type: 'loop', range: { from: 1, to: 11 }, functions: [] }] },
    check: (o) => failed(o, 'LOOP_LIMIT', 'LimitError'),
  },
  {
    name: 'depth limit → DEPTH_LIMIT before anything runs',
    options: { limits: { maxDepth: 2 }, functions: [{ ...set({ a: 1 }), functions: [{ ...set({ b: 1 }), functions: [set({ c: 1 })] }] }] },
    check: (o) => {
      failed(o, 'DEPTH_LIMIT', 'LimitError');
      if (!o.error.errorMessage.includes('functions[0].functions[0].functions[0]')) fail(o.error.errorMessage);
    },
  },
  {
    name: 'malformed nodes are refused naming the path',
    options: { functions: [{ type: 'if', conditions: [{ condition: '' }] }] },
    check: (o) => {
      failed(o, 'INVALID_PIPELINE', 'ValidationError');
      if (!o.error.errorMessage.startsWith('functions[0].conditions[0].condition')) fail(o.error.errorMessage);
    },
  },
  {
    name: 'console.log inside scripts goes into the trace',
    options: { functions: [script('console.log("hello", { a: 1 }); console.warn("careful"); return 1')] },
    check: (o) =>
      eq(
        o.trace.filter((t) => t.outcome === 'log').map((t) => t.message),
        ['hello {"a":1}', '[warn] careful'],
        'logs',
      ),
  },
  {
    name: 'user code with retry, continueOnError and timeouts in loops and ifs (compiled segments)',
    options: {
      limits: { runTimeoutMs: 20000 },
      customFunctions: [
        {
          package: 'com.acme.function.flaky',
          code: 'async (settings, context) => { context.tries = (context.tries ?? 0) + 1; if (context.tries % 2 === 1) throw new RangeError("odd " + context.tries); const rows = await Client.DataSources.connect(1).find(); return { rows: rows.length } }',
        },
      ],
      functions: [
        set({ n: 0 }),
        {
          type: 'loop',
          range: { from: 1, to: 3 },
          functions: [
            { functionPackage: 'com.acme.function.flaky', settings: { i: '{{ currentItem }}' }, retry: { attempts: 2 } },
            {
              type: 'if',
              conditions: [
                {
                  condition: 'currentItem !== 2',
                  functions: [script('if (currentItem === 3) throw new TypeError("three"); return { n: context.n + currentItem }', { continueOnError: true })],
                },
              ],
              elseFunctions: [script('await Client.DataSources.connect("hang").find()', { timeout: 60, continueOnError: true })],
            },
          ],
        },
        ret('{{ [n, rows, tries, lastError.errorMessage, lastError.path] }}'),
      ],
    },
    check: (o, calls) => {
      ok(o, [1, 2, 6, 'three', 'functions[1].functions[1].conditions[0].functions[0]']);
      eq(
        o.trace.filter((t) => t.outcome === 'retried').map((t) => [t.path, t.iteration]),
        [
          ['functions[1].functions[0]', 0],
          ['functions[1].functions[0]', 1],
          ['functions[1].functions[0]', 2],
        ],
        'retried',
      );
      eq(
        calls.map((c) => c[1]),
        [1, 1, 'hang', 1],
        'calls',
      );
    },
  },
  {
    name: 'user code that can never settle or spins past its timeout fails only its node under continueOnError',
    options: {
      limits: { runTimeoutMs: 20000 },
      functions: [
        script('await new Promise(() => {})', { continueOnError: true }),
        set({ first: '{{ lastError.code }}' }),
        {
          type: 'loop',
          range: { from: 0, to: 1 },
          functions: [script('for (;;) {}', { timeout: 50, continueOnError: true }), set({ i: '{{ currentItem }}' })],
        },
        ret('{{ [first, lastError.code, i] }}'),
      ],
    },
    check: (o) => ok(o, ['NEVER_SETTLES', 'TIMEOUT', 1]),
  },
];
