// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Action, ActionLog } from '../../src/actions/types.js';
import { resolveConfig, type ClientConfig } from '../../src/core/config.js';
import type { ClientContext } from '../../src/core/context.js';
import { withOnce } from '../../src/core/logger.js';
import { createTransport } from '../../src/http/transport.js';
import { createClient, type Client } from '../../src/index.js';
import { actionsCache, findCachedAction } from '../../src/storage/actions-cache.js';
import { clientStore } from '../../src/storage/client-store.js';
import { pendingRunLogs, saveRunLog, uploadRunLogs } from '../../src/storage/run-logs.js';
import { flushQueuedRequests, queuedRequests, sendOrQueue } from '../../src/storage/run-queue.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** The device's network, as the tests set it: up, down, or up but every answer lost on the way back. */
let network: 'up' | 'down' | 'lose-answers' = 'up';
let online = true;
Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => online });
const realFetch = globalThis.fetch;
/** Payload `n` of every run request that left the device, in order. */
const sentRuns: number[] = [];
const deviceFetch: typeof fetch = async (input, init) => {
  if (network === 'down') throw new TypeError('Failed to fetch');
  const request = input as Request;
  if (request.method === 'POST' && /\/tasks\/record\/run$/.test(request.url))
    sentRuns.push(((await request.clone().json()) as { payload: { n: number } }).payload.n);
  const response = await realFetch(input, init);
  if (network === 'lose-answers') {
    await response.text();
    throw new TypeError('Failed to fetch (connection reset)');
  }
  return response;
};
function goOnline() {
  network = 'up';
  online = true;
  window.dispatchEvent(new Event('online'));
}
function goOffline() {
  network = 'down';
  online = false;
  window.dispatchEvent(new Event('offline'));
}

const quiet = () => {
  const lines: string[] = [];
  const log = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } };
};

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('offline operation', () => {
  let backend: TestBackend;
  let appId: number;
  let seq = 0;

  const config = (extra: ClientConfig = {}): ClientConfig => ({
    baseUrl: backend.url,
    appId,
    authToken: backend.server.bootstrap.apiToken,
    fetch: deviceFetch,
    ...extra,
  });
  /** A client as a page load makes it (a "reload" is a second one over the same IndexedDB). */
  const page = (extra: ClientConfig = {}): Client => createClient({ logger: quiet().logger, ...config(extra) });
  function context(extra: ClientConfig = {}): ClientContext {
    const resolved = resolveConfig(config(extra));
    const http = createTransport({ baseUrl: () => resolved.baseUrl!, authToken: () => resolved.authToken, fetch: resolved.fetch });
    return { http, config: () => resolved, appId: () => appId, now: () => Date.now(), logger: withOnce(quiet().logger) };
  }
  const entries = async (name: string) => {
    const ds = await backend.client.DataSources.connect(name);
    return (await ds.find({})) as { data: { n: number; tag: string } }[];
  };

  beforeAll(async () => {
    backend = await startTestBackend();
    appId = backend.server.bootstrap.appId;
    await backend.studio.DataSources.create({ name: 'offline-runs' });
    const action = await backend.studio.App.Actions.create({
      name: 'record',
      environment: 'server',
      functions: [{ functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: 'offline-runs', data: { n: '{{ n }}', tag: '{{ tag }}' } } }],
    });
    await backend.studio.App.Actions.publish(action.id, true);
  });
  afterAll(() => backend?.close());
  beforeEach(() => {
    goOnline();
  });

  it('queues run() of a server action made offline, keeps it over a reload, sends each once and in order when back online', async () => {
    const tag = `t${++seq}`;
    goOffline();
    const first = page();
    for (const n of [1, 2, 3]) await first.App.Actions.run('record', { n, tag }); // resolves once queued
    expect(await entries('offline-runs').then((e) => e.filter((x) => x.data.tag === tag))).toEqual([]);

    // The page is reloaded while still offline: the queue is read back from IndexedDB.
    const reloaded = context();
    expect((await queuedRequests(reloaded)).map((r) => (r.json as { payload: { n: number } }).payload.n)).toEqual([1, 2, 3]);
    const second = page();
    void second;
    sentRuns.length = 0;
    goOnline(); // both page instances hear it: the idempotency keys keep it to one run each
    const mine = await eventually(
      () => entries('offline-runs').then((e) => e.filter((x) => x.data.tag === tag)),
      (e) => e.length >= 3,
    );
    await new Promise((r) => setTimeout(r, 300)); // time for any duplicate to show up
    // Each run applied once (the backend's worker may run them side by side, so compare as sets)…
    expect((await entries('offline-runs')).filter((x) => x.data.tag === tag).map((x) => x.data.n).sort()).toEqual([1, 2, 3]);
    expect(mine).toHaveLength(3);
    // …and sent in the order they were made.
    expect([...new Set(sentRuns)]).toEqual([1, 2, 3]);
    expect(await queuedRequests(reloaded)).toEqual([]);
  });

  it('a run whose answer was lost is queued with its key and applied once', async () => {
    const tag = `t${++seq}`;
    const ctx = context();
    network = 'lose-answers';
    const result = await sendOrQueue(ctx, {
      method: 'POST',
      path: `v1/apps/${appId}/tasks/record/run`,
      json: { payload: { n: 7, tag }, wait: false },
      label: 'run of "record"',
    });
    expect(result.queued).toBe(true);
    network = 'up';
    expect(await flushQueuedRequests(ctx)).toEqual({ sent: 1, dropped: 0, remaining: 0 });
    const mine = await eventually(() => entries('offline-runs').then((e) => e.filter((x) => x.data.tag === tag)), (e) => e.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(mine.map((x) => x.data.n)).toEqual([7]);
    expect((await entries('offline-runs')).filter((x) => x.data.tag === tag)).toHaveLength(1);
  });

  it('drops a queued request the backend refuses for good, reports it, and sends the ones after it', async () => {
    const tag = `t${++seq}`;
    const { lines, logger } = quiet();
    const ctx = { ...context(), logger: withOnce(logger) };
    goOffline();
    await sendOrQueue(ctx, { method: 'POST', path: `v1/apps/${appId}/tasks/no-such-action/run`, json: { payload: {} }, label: 'run of "no-such-action"' });
    await sendOrQueue(ctx, { method: 'POST', path: `v1/apps/${appId}/tasks/record/run`, json: { payload: { n: 9, tag } }, label: 'run of "record"' });
    expect(await queuedRequests(ctx)).toHaveLength(2);
    network = 'up';
    online = true;
    expect(await flushQueuedRequests(ctx)).toEqual({ sent: 1, dropped: 1, remaining: 0 });
    expect(lines.join('\n')).toMatch(/error: .*refused run of "no-such-action".*dropping it/);
    await eventually(() => entries('offline-runs').then((e) => e.filter((x) => x.data.tag === tag)), (e) => e.length >= 1);
  });

  it('keeps requests queued while the backend fails (5xx, no network) and keeps their order', async () => {
    const ctx = context();
    goOffline();
    online = true; // the browser thinks it is online, the network is not there
    for (const n of [1, 2]) await sendOrQueue(ctx, { method: 'POST', path: `v1/apps/${appId}/analytics`, json: { events: [{ type: 'analytics.event', data: { category: 'q', action: String(n) } }] }, label: `event ${n}` });
    expect((await queuedRequests(ctx)).map((r) => r.label)).toEqual(['event 1', 'event 2']);
    expect(await flushQueuedRequests(ctx)).toEqual({ sent: 0, dropped: 0, remaining: 2 });
    network = 'up';
    expect(await flushQueuedRequests(ctx)).toEqual({ sent: 2, dropped: 0, remaining: 0 });
  });

  it('analytics batches wait offline, survive a reload and are stored once by the backend', async () => {
    const marker = `m${++seq}`;
    goOffline();
    const first = page();
    first.App.Analytics.pageView({ marker });
    first.App.Analytics.event({ category: 'form', action: 'submit', marker });
    await first.App.Analytics.flush(); // stored in the analytics queue; nothing can be sent
    const count = async () => {
      const { body } = await backend.api('GET', `/v1/apps/${appId}/analytics?limit=1000`);
      return (body.events as { data: { marker?: string } }[]).filter((e) => e.data.marker === marker).length;
    };
    expect(await count()).toBe(0);
    // Reloaded while the answers get lost: sent, stored, but the device does not know it.
    const second = page();
    network = 'lose-answers';
    online = true;
    await second.App.Analytics.flush();
    expect(await count()).toBe(2);
    network = 'up';
    await second.App.Analytics.flush(); // re-sent with the same batch id
    expect(await count()).toBe(2);
  });

  it('caches the actions list: answers offline after a reload, refreshes when stale, tells listeners', async () => {
    const fetched: number[] = [];
    const list = (n: number) => [{ id: n, name: `a${n}`, environment: 'client', active: true, triggers: [] } as unknown as Action];
    let version = 1;
    const fetchList = async () => {
      fetched.push(version);
      if (network === 'down') throw new TypeError('offline');
      return list(version);
    };
    const ctx = context({ appId });
    const cache = actionsCache(ctx, { fetch: fetchList, maxAgeMs: 60_000 });
    const heard: string[][] = [];
    cache.subscribe((actions) => heard.push(actions.map((a) => a.name)));
    await (await clientStore(ctx)).delete('actions', 'live');
    expect(await cache.refresh()).toEqual(list(1));
    expect(heard.at(-1)).toEqual(['a1']);

    // Reload offline: the list comes from IndexedDB, no fetch needed.
    goOffline();
    const reloaded = context();
    const cold = actionsCache(reloaded, { fetch: fetchList, maxAgeMs: 60_000 });
    const before = fetched.length;
    expect((await cold.get()).map((a) => a.name)).toEqual(['a1']);
    expect(fetched.length).toBe(before);
    expect((await findCachedAction(reloaded, 'a1'))?.id).toBe(1);
    expect((await findCachedAction(reloaded, '1'))?.name).toBe('a1');
    expect(await findCachedAction(reloaded, 'nope')).toBeUndefined();

    // Online and stale: get() answers at once and refreshes in the background.
    network = 'up';
    online = true;
    version = 2;
    cold.invalidate();
    expect((await cold.get()).map((a) => a.name)).toEqual(['a1']);
    expect((await eventually(() => cold.get(), (a) => a[0]?.name === 'a2')).map((a) => a.name)).toEqual(['a2']);
    expect(await (await clientStore(reloaded)).get('actions', 'live')).toMatchObject({ actions: list(2) });
  });

  it('keeps device run logs until an upload succeeds, oldest first', async () => {
    const ctx = context();
    const store = await clientStore(ctx);
    await store.clear('runLogs');
    const log = (n: number): ActionLog => ({ id: null, createdAt: `2030-01-01T00:00:0${n}.000Z`, type: 'app.action.completed', data: { mode: 'on-demand', duration: n, actionId: 1, result: n } });
    for (const n of [1, 2, 3]) await saveRunLog(ctx, log(n));
    const pending = await pendingRunLogs(ctx);
    expect(pending.map((p) => p.log.data.result)).toEqual([1, 2, 3]);
    expect(new Set(pending.map((p) => p.log.deviceKey)).size).toBe(3);
    expect(await uploadRunLogs(ctx, async () => Promise.reject(new TypeError('offline')))).toEqual({ uploaded: 0, remaining: 3 });
    const uploaded: unknown[] = [];
    expect(await uploadRunLogs(ctx, async (logs) => void uploaded.push(logs.map((l) => l.data.result)), 2)).toEqual({ uploaded: 3, remaining: 0 });
    expect(uploaded).toEqual([[1, 2], [3]]);
    expect(await pendingRunLogs(ctx)).toEqual([]);
  });
});
