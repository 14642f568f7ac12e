// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { resolveConfig } from '../../src/core/config.js';
import type { ClientContext } from '../../src/core/context.js';
import { createRuntime } from '../../src/core/runtime.js';
import { withOnce } from '../../src/core/logger.js';
import { createTransport } from '../../src/http/transport.js';
import { clientStore } from '../../src/storage/client-store.js';
import type { CachedActions } from '../../src/storage/actions-cache.js';
import { passConditionalRequests } from '../helpers/happy-dom-fetch.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** A client configured after it was created (script tag first, `Client.configure()` later) keeps its device work straight. */
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
globalThis.fetch = passConditionalRequests(globalThis.fetch);
let online = true;
Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => online });

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('configure() after start-up', () => {
  let b: TestBackend;
  let appId: number;
  beforeAll(async () => {
    b = await startTestBackend();
    appId = b.server.bootstrap.appId;
    await b.studio.DataSources.create({ name: 'late' });
    const action = await b.studio.App.Actions.create({
      name: 'late-run',
      environment: 'server',
      functions: [{ functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: 'late', data: { n: '{{ n }}' } } }],
    });
    await b.studio.App.Actions.publish(action.id, true);
    await b.studio.App.Actions.create({ name: 'working-only', environment: 'client', triggers: [{ trigger: 'analytics' }] });
  });
  afterAll(() => b?.close());

  it('sends the runs an earlier visit queued for an app set only by configure()', async () => {
    online = false;
    const down: typeof fetch = async () => {
      throw new TypeError('Failed to fetch');
    };
    const first = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: down, logger: quiet });
    await first.App.Actions.run('late-run', { n: 1 }); // queued on the device
    online = true;
    // The next page load: the client starts without an app and is configured a moment later.
    const next = createClient({ baseUrl: b.url, authToken: b.server.bootstrap.apiToken, logger: quiet });
    await new Promise((r) => setTimeout(r, 20));
    next.configure({ appId });
    const ds = await b.client.DataSources.connect('late');
    const rows = await eventually(
      () => ds.find({}),
      (r) => r.length > 0,
    );
    expect(rows.map((r) => r.data.n)).toEqual([1]);
  });

  it('a live screen switched to the viewer keeps the live list under its own key', async () => {
    const client = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.studioToken, logger: quiet });
    client.App.Analytics.pageView({ _pageId: 1 }); // loads the live actions list for the triggers
    await client.App.Analytics.idle();
    const config = resolveConfig({ baseUrl: b.url, appId });
    const ctx: ClientContext = {
      http: createTransport({ baseUrl: () => b.url, authToken: () => undefined }),
      config: () => config,
      appId: () => appId,
      now: () => Date.now(),
      logger: withOnce(quiet),
      runtime: createRuntime(),
    };
    const store = await clientStore(ctx);
    const names = async () => ((await store.get<CachedActions>('actions', 'live'))?.actions ?? []).map((a) => a.name);
    expect(await names()).toEqual(['late-run']);
    client.configure({ environment: 'viewer' });
    window.dispatchEvent(new Event('online')); // the live cache refreshes
    await new Promise((r) => setTimeout(r, 300));
    expect(await names()).toEqual(['late-run']); // not the viewer's working copies
  });
});
