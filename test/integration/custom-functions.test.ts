// @vitest-environment node
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { rejection } from '../helpers/wait.js';

const builtin = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

type AnyClient = ReturnType<typeof createClient>;
/** Creates and publishes an action (the live app runs published actions only). */
async function publish(client: AnyClient, definition: Parameters<AnyClient['App']['Actions']['create']>[0]) {
  const action = await client.App.Actions.create(definition);
  await client.App.Actions.publish(action.id, true);
  return action;
}

let b: TestBackend;
let appId: number;
const functionsPath = () => `/v1/apps/${appId}/tasks/functions`;
const addFunction = async (body: Record<string, unknown>) => {
  const res = await b.api('POST', functionsPath(), { token: b.server.bootstrap.studioToken, json: body });
  expect(res.status).toBe(201);
  return res.body.function;
};

beforeAll(async () => {
  b = await startTestBackend();
  appId = b.server.bootstrap.appId;
  await addFunction({
    package: 'com.acme.function.total',
    name: 'Total',
    description: 'Sums settings.values, times the context factor',
    code: `async (settings, context) => {
      console.log('summing ' + settings.values.length);
      const sum = settings.values.reduce((a, v) => a + v, 0);
      return { total: sum * (context.factor || 1) };
    }`,
  });
  await addFunction({ package: 'com.acme.function.server-secret', environment: 'server', code: `(settings) => ({ secret: 'S3' })` });
  await addFunction({ package: 'com.acme.function.device-only', environment: 'client', code: `(settings) => ({ device: true })` });
});
afterAll(() => b.close());

describe('custom functions in server runs', () => {
  it('a stored custom function runs in the sandbox: templates in its settings, its object merged into the context, console.log in the trace', async () => {
    await publish(b.client, {
      name: 'cf-server',
      functions: [{ functionPackage: 'com.acme.function.total', settings: { values: '{{ [a, b, 3] }}' } }, builtin('return', { value: '{{ total + 1 }}' })],
    });
    expect(await b.client.App.Actions.runWithResult('cf-server', { a: 1, b: 2, factor: 10 })).toBe(61);
    const { logs } = await b.client.App.Actions.getLogs({ limit: 1 });
    expect(logs[0]).toMatchObject({ type: 'app.action.completed', data: { result: 61, source: 'server' } });
  });

  it('uses the custom function that was stored after the action was created, and a failing one fails the run with its path', async () => {
    await publish(b.client, { name: 'cf-late', functions: [{ functionPackage: 'com.acme.function.late', settings: { x: '{{ x }}' } }] });
    const before = await rejection(b.client.App.Actions.runWithResult('cf-late', { x: 1 }));
    expect(before.code).toBe('UNKNOWN_FUNCTION');
    await addFunction({
      package: 'com.acme.function.late',
      code: `(settings) => { if (settings.x > 1) throw new RangeError('x is too big'); return { late: settings.x }; }`,
    });
    expect(await b.client.App.Actions.runWithResult('cf-late', { x: 1 })).toEqual({ late: 1 });
    const failed = await rejection(b.client.App.Actions.runWithResult('cf-late', { x: 2 }));
    expect(failed.code).toBe('FUNCTION_FAILED');
    expect(failed.message).toContain('x is too big');
    expect(failed.details.trace).toEqual([expect.objectContaining({ path: 'functions[0]', package: 'com.acme.function.late', outcome: 'failed' })]);
  });

  it('an unknown package fails with UNKNOWN_FUNCTION naming the node path', async () => {
    await publish(b.client, {
      name: 'cf-unknown',
      functions: [builtin('set', { a: 1 }), { type: 'loop', range: { from: 1, to: 2 }, functions: [{ functionPackage: 'com.acme.function.nope' }] }],
    });
    const error = await rejection(b.client.App.Actions.runWithResult('cf-unknown'));
    expect(error.code).toBe('UNKNOWN_FUNCTION');
    expect(error.message).toContain('functions[1].functions[0]');
    expect(error.message).toContain('com.acme.function.nope');
  });

  it('a device-only (client) custom function is unavailable in a server run, before anything runs', async () => {
    const ds = await b.client.DataSources.create({ name: 'cf-side-effects' });
    await publish(b.client, {
      name: 'cf-wrong-side',
      functions: [builtin('insert-entry', { dataSourceId: ds.id, data: { n: 1 } }), { functionPackage: 'com.acme.function.device-only' }],
    });
    const error = await rejection(b.client.App.Actions.runWithResult('cf-wrong-side'));
    expect(error.code).toBe('FUNCTION_UNAVAILABLE');
    expect(error.message).toContain('functions[1]');
    expect(error.message).toContain('com.acme.function.device-only');
    expect(await (await b.client.DataSources.connect(ds.id)).find()).toEqual([]);
  });

  it('a server-only function runs on the server and its code is not sent to devices', async () => {
    await publish(b.client, { name: 'cf-secret', functions: [{ functionPackage: 'com.acme.function.server-secret' }] });
    expect(await b.client.App.Actions.runWithResult('cf-secret')).toEqual({ secret: 'S3' });
    const catalog = await b.api('GET', `${functionsPath()}?include=code`);
    expect(catalog.status).toBe(200);
    const byPackage = Object.fromEntries(catalog.body.functions.map((f: { package: string }) => [f.package, f]));
    expect(byPackage['com.acme.function.total'].code).toContain('summing');
    expect(byPackage['com.acme.function.server-secret']).toMatchObject({ environment: 'server' });
    expect(byPackage['com.acme.function.server-secret'].code).toBeUndefined();
    expect(byPackage['com.client.function.set'].code).toBeUndefined();
    const plain = await b.api('GET', functionsPath());
    expect(plain.body.functions.every((f: { code?: string }) => f.code === undefined)).toBe(true);
    expect((await b.api('GET', `${functionsPath()}?include=everything`)).status).toBe(400);
  });
});

describe('custom functions on the debug compile page', () => {
  it('loads each stored function as its own named script; server-only ones only for studio tokens', async () => {
    const action = await publish(b.client, {
      name: 'cf-debug',
      environment: 'client',
      functions: [{ functionPackage: 'com.acme.function.total', settings: { values: [1] } }],
    });
    const page = async (token: string) => {
      const res = await fetch(`${b.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=${token}`);
      expect(res.status).toBe(200);
      return res.text();
    };
    const scriptOf = (html: string, pkg: string) =>
      html.match(new RegExp(`<script[^>]*>\\n// Custom function ${pkg.replace(/\./g, '\\.')}[^]*?</script>`))?.[0];
    const api = await page(b.server.bootstrap.apiToken);
    const total = scriptOf(api, 'com.acme.function.total')!;
    expect(total).toContain('Client.Functions.register("com.acme.function.total", (async (settings, context) => {');
    expect(total).toContain("console.log('summing ' + settings.values.length);");
    expect(total).toContain('//# sourceURL=custom-functions/com.acme.function.total.js');
    expect(scriptOf(api, 'com.acme.function.device-only')).toContain('//# sourceURL=custom-functions/com.acme.function.device-only.js');
    expect(api).not.toContain('com.acme.function.server-secret');
    const studio = await page(b.server.bootstrap.studioToken);
    expect(scriptOf(studio, 'com.acme.function.server-secret')).toContain("(settings) => ({ secret: 'S3' })");
  });
});

describe('custom functions in device runs', () => {
  it('a function registered on the device runs in the device sandbox for a client action', async () => {
    const device = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken });
    device.Functions.register('com.device.function.greet', (settings: { name: string }) => ({ greeting: `hi ${settings.name}` }));
    await publish(device, {
      name: 'cf-device-registered',
      environment: 'client',
      functions: [{ functionPackage: 'com.device.function.greet', settings: { name: '{{ who }}' } }, builtin('return', { value: '{{ greeting }}!' })],
    });
    expect(await device.App.Actions.runWithResult('cf-device-registered', { who: 'Ann' })).toBe('hi Ann!');
    // Another device (and the backend) does not know it.
    const other = await rejection(b.client.App.Actions.runWithResult('cf-device-registered', { who: 'Bo' }));
    expect(other.code).toBe('UNKNOWN_FUNCTION');
    expect(other.message).toContain('com.device.function.greet');
  });

  it('a backend-stored function runs on the device, is cached there and works from the last fetch when the catalog cannot be reached', async () => {
    const requests: string[] = [];
    let catalogDown = false;
    const fetchVia = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = input instanceof Request ? input : new Request(input, init);
      if (request.url.includes('/tasks/functions')) {
        requests.push(new URL(request.url).search);
        if (catalogDown) throw new TypeError('network down');
      }
      return fetch(request);
    }) as typeof fetch;
    // A package this device has not seen yet (other tests may have cached the list already).
    await addFunction({
      package: 'com.acme.function.scaled',
      code: `(settings, context) => ({ total: settings.values.reduce((a, v) => a + v, 0) * (context.factor || 1) })`,
    });
    const device = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: fetchVia });
    await publish(device, {
      name: 'cf-device-stored',
      environment: 'client',
      functions: [{ functionPackage: 'com.acme.function.scaled', settings: { values: '{{ values }}' } }],
    });
    expect(await device.App.Actions.runWithResult('cf-device-stored', { values: [1, 2], factor: 2 })).toEqual({ total: 6 });
    expect(await device.App.Actions.runWithResult('cf-device-stored', { values: [5] })).toEqual({ total: 5 });
    expect(requests).toEqual(['?include=code']); // fetched once, then from the cache
    const { logs } = await device.App.Actions.getLogs({ limit: 1 });
    expect(logs[0]!.data).toMatchObject({ source: 'device', result: { total: 5 } });

    // A new client on this device (a reload) an hour later, the catalog unreachable: its refresh fails, the stored list from the last fetch is used.
    catalogDown = true;
    const later = () => Date.now() + 3_600_000;
    const reloaded = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: fetchVia, clock: later });
    expect(await reloaded.App.Actions.runWithResult('cf-device-stored', { values: [4, 4] })).toEqual({ total: 8 });
    expect(requests.length).toBe(2);
    // A package the stored list lacks cannot be had while the catalog is down.
    await publish(device, { name: 'cf-device-absent', environment: 'client', functions: [{ functionPackage: 'com.acme.function.absent' }] });
    const absent = await rejection(reloaded.App.Actions.runWithResult('cf-device-absent'));
    expect(absent.code).toBe('UNKNOWN_FUNCTION');
    expect(requests.length).toBe(3);
  });

  it('fetches the catalog again when a pipeline names a package the cached list lacks', async () => {
    const device = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken });
    await publish(device, { name: 'cf-warm', environment: 'client', functions: [{ functionPackage: 'com.acme.function.total', settings: { values: [1] } }] });
    expect(await device.App.Actions.runWithResult('cf-warm')).toEqual({ total: 1 });
    await addFunction({ package: 'com.acme.function.newer', code: `() => 'newer'` });
    await publish(device, { name: 'cf-newer', environment: 'client', functions: [{ functionPackage: 'com.acme.function.newer' }] });
    expect(await device.App.Actions.runWithResult('cf-newer')).toBe('newer');
  });

  it('device registrations win over stored functions of the same package; server-only and unknown packages fail clearly', async () => {
    const device = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken });
    device.Functions.register('com.acme.function.total', { code: `(settings) => ({ total: 'local' })` });
    await publish(device, {
      name: 'cf-override',
      environment: 'client',
      functions: [{ functionPackage: 'com.acme.function.total', settings: { values: [1] } }],
    });
    expect(await device.App.Actions.runWithResult('cf-override')).toEqual({ total: 'local' });

    await publish(device, {
      name: 'cf-device-secret',
      environment: 'client',
      functions: [builtin('set', { a: 1 }), { functionPackage: 'com.acme.function.server-secret' }],
    });
    const secret = await rejection(device.App.Actions.runWithResult('cf-device-secret'));
    expect(secret.code).toBe('FUNCTION_UNAVAILABLE');
    expect(secret.message).toContain('functions[1]');
    expect(secret.message).toContain('server only');

    await publish(device, {
      name: 'cf-device-unknown',
      environment: 'any',
      functions: [{ type: 'if', conditions: [{ condition: 'true', functions: [{ functionPackage: 'com.acme.function.missing' }] }] }],
    });
    const unknown = await rejection(device.App.Actions.runWithResult('cf-device-unknown'));
    expect(unknown.code).toBe('UNKNOWN_FUNCTION');
    expect(unknown.message).toContain('functions[0].conditions[0].functions[0]');
    expect(unknown.message).toContain('com.acme.function.missing');
  });
});

describe('storing custom function code', () => {
  const studio = () => b.server.bootstrap.studioToken;
  const store = (pkg: string, code: string) => b.api('POST', functionsPath(), { token: studio(), json: { package: pkg, code } });
  const stored = async () => (await b.api('GET', functionsPath())).body.functions.map((f: { package: string }) => f.package);

  it('a syntax error is a 400 naming the package and the line, and nothing is stored', async () => {
    const res = await store(
      'com.acme.function.broken',
      `async (settings, context) => {\n  const total = settings.values.reduce((a, v) => a + v, 0;\n  return { total };\n}`,
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_FUNCTION_CODE', package: 'com.acme.function.broken', line: 2 });
    expect(res.body.error.message).toContain('com.acme.function.broken');
    expect(res.body.error.message).toContain('line 2');
    expect(await stored()).not.toContain('com.acme.function.broken');
  });

  it('a plain body (what a script node takes) is refused with the expected format; the function form is then stored and runs', async () => {
    const body = 'const total = settings.values.reduce((a, v) => a + v, 0);\nreturn { total };';
    const res = await store('com.acme.function.body', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_FUNCTION_CODE', package: 'com.acme.function.body', line: 1 });
    expect(res.body.error.message).toContain('function body');
    expect(res.body.error.message).toContain('(settings, context) => { … }');
    expect(await stored()).not.toContain('com.acme.function.body');

    expect((await store('com.acme.function.body', `(settings, context) => {\n${body}\n}`)).status).toBe(201);
    await publish(b.client, { name: 'cf-body', functions: [{ functionPackage: 'com.acme.function.body', settings: { values: [2, 3] } }] });
    expect(await b.client.App.Actions.runWithResult('cf-body')).toEqual({ total: 5 });
  });

  it('code that is not one function expression is refused with the line and column where the rest begins', async () => {
    for (const [code, column] of [
      ['settings.x + 1', 1],
      ['(function () { return 1 })()', 27],
      ['(s) => s, 2', 9],
    ] as const) {
      const res = await store('com.acme.function.not-a-function', code);
      expect(res.status, code).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_FUNCTION_CODE', line: 1, column });
      expect(res.body.error.message).toContain('a stored function must be one function expression');
    }
    expect(await stored()).not.toContain('com.acme.function.not-a-function');
  });

  it('the code is compiled, never run, when it is stored', async () => {
    const ds = await b.client.DataSources.create({ name: 'cf-never-run' });
    // Were it run, this would insert an entry the first time its outer function is evaluated.
    const res = await store('com.acme.function.side-effect', `(() => { Client.DataSources.connect(${ds.id}).insert({ ran: true }); return 1 })()`);
    expect(res.status).toBe(400);
    expect((await store('com.acme.function.loop', '(settings) => { for (;;) {} }')).status).toBe(201);
    expect(await (await b.client.DataSources.connect(ds.id)).find()).toEqual([]);
  });
});

describe('catalog ids', () => {
  it('stored functions get ids above 1000, never a built-in id, in the REST catalog and in Tasks.Functions.get()', async () => {
    const catalog = (await b.api('GET', functionsPath())).body.functions as { id: number; package: string }[];
    const builtins = catalog.filter((f) => f.package.startsWith('com.client.function.'));
    const custom = catalog.filter((f) => !f.package.startsWith('com.client.function.'));
    expect(builtins.map((f) => f.id)).toEqual(builtins.map((_, i) => i + 1));
    expect(custom.length).toBeGreaterThan(3);
    expect(custom.every((f) => f.id > 1000)).toBe(true);
    expect(new Set(catalog.map((f) => f.id)).size).toBe(catalog.length);

    const device = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken });
    device.Functions.register('com.device.function.local', (settings: unknown) => settings);
    const listed = await device.App.Tasks.Functions.get();
    expect(new Set(listed.map((f) => f.id)).size).toBe(listed.length);
    expect(listed.find((f) => f.package === 'com.acme.function.total')!.id).toBe(custom.find((f) => f.package === 'com.acme.function.total')!.id);
    expect(listed.find((f) => f.package === 'com.device.function.local')!.id).toBeLessThan(0);
  });
});
