// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Action, ActionLog } from '../../src/contract/actions.js';
import { resolveConfig, type ClientConfig } from '../../src/core/config.js';
import type { ClientContext } from '../../src/core/context.js';
import { createRuntime } from '../../src/core/runtime.js';
import { runsHost } from '../../src/actions/runs-host.js';
import { withOnce } from '../../src/core/logger.js';
import { createTransport } from '../../src/http/transport.js';
import { createClient, type Client } from '../../src/index.js';
import { actionsCache, findCachedAction } from '../../src/storage/actions-cache.js';
import { deleteDB, openDB } from 'idb';
import { clientStore, localDbName } from '../../src/storage/client-store.js';
import { LOCAL_DB_VERSION, STORE_NAMES, timeKey } from '../../src/storage/local-store.js';
import { createOutbox } from '../../src/storage/outbox.js';
import { MAX_RUN_LOGS, pendingRunLogs, saveRunLog, uploadRunLogs } from '../../src/storage/run-logs.js';
import { flushQueuedRequests, queuedRequests, sendOrQueue } from '../../src/storage/run-queue.js';
import { passConditionalRequests } from '../helpers/happy-dom-fetch.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** The device's network, as the tests set it: up, down, or up but every answer lost on the way back. */
let network: 'up' | 'down' | 'lose-answers' = 'up';
let online = true;
Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => online });
const realFetch = passConditionalRequests(globalThis.fetch);
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

/** `read()` until `ok`, or `ms` passed (a bound for a loaded 2-core machine: it returns as soon as `ok`). */
async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
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
    return { http, config: () => resolved, appId: () => appId, now: () => Date.now(), logger: withOnce(quiet().logger), runtime: createRuntime() };
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
      functions: [
        { functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: 'offline-runs', data: { n: '{{ n }}', tag: '{{ tag }}' } } },
      ],
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
    expect(
      (await entries('offline-runs'))
        .filter((x) => x.data.tag === tag)
        .map((x) => x.data.n)
        .sort(),
    ).toEqual([1, 2, 3]);
    expect(mine).toHaveLength(3);
    // …and sent in the order they were made.
    expect([...new Set(sentRuns)]).toEqual([1, 2, 3]);
    // A request leaves the queue once its answer is handled, which can lag the entries on a loaded machine.
    expect(
      await eventually(
        () => queuedRequests(reloaded),
        (q) => q.length === 0,
      ),
    ).toEqual([]);
  }, 60_000);

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
    const mine = await eventually(
      () => entries('offline-runs').then((e) => e.filter((x) => x.data.tag === tag)),
      (e) => e.length >= 1,
    );
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
    await eventually(
      () => entries('offline-runs').then((e) => e.filter((x) => x.data.tag === tag)),
      (e) => e.length >= 1,
    );
  });

  it('keeps requests queued while the backend fails (5xx, no network) and keeps their order', async () => {
    const ctx = context();
    goOffline();
    online = true; // the browser thinks it is online, the network is not there
    for (const n of [1, 2])
      await sendOrQueue(ctx, {
        method: 'POST',
        path: `v1/apps/${appId}/analytics`,
        json: { events: [{ type: 'analytics.event', data: { category: 'q', action: String(n) } }] },
        label: `event ${n}`,
      });
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
      return { actions: list(version) };
    };
    const ctx = context({ appId });
    const cache = actionsCache(ctx, { fetch: fetchList, maxAgeMs: 60_000 });
    const heard: string[][] = [];
    cache.subscribe((actions) => heard.push(actions.map((a) => a.name)));
    await (await clientStore(ctx)).delete('actions', ['live']);
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
    expect(
      (
        await eventually(
          () => cold.get(),
          (a) => a[0]?.name === 'a2',
        )
      ).map((a) => a.name),
    ).toEqual(['a2']);
    expect(await (await clientStore(reloaded)).get('actions', 'live')).toMatchObject({ actions: list(2) });
  });

  it('keeps device run logs until an upload succeeds, oldest first', async () => {
    const ctx = context();
    const store = await clientStore(ctx);
    await store.clear('runLogs');
    const log = (n: number): ActionLog => ({
      id: null,
      createdAt: `2030-01-01T00:00:0${n}.000Z`,
      type: 'app.action.completed',
      data: { mode: 'on-demand', duration: n, actionId: 1, result: n },
    });
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

  it('device run logs handed over while a write is under way go together in the next transaction, in order', async () => {
    const ctx = context();
    const store = await clientStore(ctx);
    await store.clear('runLogs');
    const log = (n: number): ActionLog => ({
      id: null,
      createdAt: new Date(1_900_000_000_000 + n).toISOString(),
      type: 'app.action.completed',
      data: { mode: 'on-demand', duration: n, actionId: 1, result: n },
    });
    // Real IndexedDB semantics (fake-indexeddb): count the read-write transactions on the store.
    const proto = (globalThis as unknown as { IDBDatabase: { prototype: { transaction(...args: unknown[]): unknown } } }).IDBDatabase.prototype;
    const transaction = proto.transaction;
    let writes = 0;
    proto.transaction = function (this: unknown, ...args: unknown[]) {
      if (String(args[0]) === 'runLogs' && args[1] === 'readwrite') writes++;
      return transaction.apply(this, args);
    };
    try {
      const first = [1, 2, 3, 4, 5].map((n) => saveRunLog(ctx, log(n)));
      // Made while the first write is under way: they wait for it, then go in one transaction.
      await new Promise((r) => setTimeout(r, 0));
      const second = [6, 7, 8].map((n) => saveRunLog(ctx, log(n)));
      // Client.status's count of pending logs waits for both writes.
      const status = runsHost(ctx).count('runLogs');
      await Promise.all([...first, ...second]);
      expect(writes).toBe(2);
      expect(await status).toBe(8);
    } finally {
      proto.transaction = transaction;
    }
    const pending = await pendingRunLogs(ctx);
    expect(pending.map((p) => p.log.data.result)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(new Set(pending.map((p) => p.key)).size).toBe(8);
    // What reads the records waits for the writes handed over before it.
    const more = [9, 10].map((n) => saveRunLog(ctx, log(n)));
    expect((await pendingRunLogs(ctx)).map((p) => p.log.data.result)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await Promise.all(more);
    await store.clear('runLogs');
  });

  it('configure({ appId }): the analytics batches of each app are sent to that app, from that app store', async () => {
    const other = await backend.server.createOrganization('second-app');
    const tokens: Record<string, string> = { [appId]: backend.server.bootstrap.apiToken, [other.appId]: other.apiToken };
    /** Markers of the analytics events POSTed, by the app of the URL. */
    const posted: Record<string, string[]> = {};
    const fetchPerApp: typeof fetch = async (input) => {
      if (network === 'down') throw new TypeError('Failed to fetch');
      const request = input as Request;
      const app = /\/v1\/apps\/(\d+)\//.exec(request.url)?.[1];
      if (request.method === 'POST' && app && request.url.endsWith('/analytics')) {
        const batch = (await request.clone().json()) as { events: { data: { marker?: string } }[] };
        (posted[app] ??= []).push(...batch.events.map((e) => e.data.marker ?? '?'));
      }
      // The device holds each app's token (the test sets it per URL; the bug is not about tokens).
      const headers = new Headers(request.headers);
      if (app && tokens[app]) headers.set('Auth-token', tokens[app]!);
      return realFetch(new Request(request, { headers }));
    };
    const stored = async (app: number, token: string, marker: string) => {
      const { body } = await backend.api('GET', `/v1/apps/${app}/analytics?limit=1000`, { token });
      return (body.events as { data: { marker?: string } }[]).filter((e) => e.data.marker === marker).length;
    };
    const a = `a${++seq}`;
    const b = `b${seq}`;
    goOffline();
    const client = page({ fetch: fetchPerApp });
    client.App.Analytics.event({ category: 'c', action: 'x', marker: a });
    await client.App.Analytics.flush();
    client.configure({ appId: other.appId, authToken: other.apiToken });
    client.App.Analytics.event({ category: 'c', action: 'x', marker: b });
    await client.App.Analytics.flush();
    goOnline();
    await eventually(
      async () => (await stored(appId, tokens[appId]!, a)) + (await stored(other.appId, other.apiToken, b)),
      (n) => n >= 2,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(posted[String(appId)]).toEqual([a]);
    expect(posted[String(other.appId)]).toEqual([b]);
    expect(await stored(appId, tokens[appId]!, a)).toBe(1);
    expect(await stored(other.appId, other.apiToken, b)).toBe(1);
    // Nothing of either is left in the first app's store (the second app's batch was never put there).
    const left = await (await clientStore(context())).getAll<{ events: { data: { marker?: string } }[] }>('analyticsQueue');
    expect(left.flatMap((e) => e.value.events.map((x) => x.data.marker)).filter((m) => m === a || m === b)).toEqual([]);
  });

  it('a flush() asked for at any moment of a running flush sends what was queued before it (no missed wake-up)', async () => {
    // A Web Locks stand-in lets the test call flush() a chosen number of microtasks after a pass of the
    // running flush ended: before, during and after the moment the run decides it is done.
    const nav = window.navigator as unknown as { locks?: unknown };
    let afterPass: (() => void) | undefined;
    Object.defineProperty(nav, 'locks', {
      configurable: true,
      value: {
        request: <R>(_name: string, _options: { signal: AbortSignal }, fn: () => Promise<R>) =>
          fn().then((r) => {
            const hook = afterPass;
            afterPass = undefined;
            hook?.();
            return r;
          }),
      },
    });
    try {
      for (let hops = 0; hops < 12; hops++) {
        const outboxApp = 990_000 + hops; // a store of its own (nothing is sent to the backend)
        const ctx = { ...context(), appId: () => outboxApp };
        const sent: string[] = [];
        const store = await clientStore(ctx, outboxApp);
        const outbox = createOutbox<string>({
          ctx,
          appId: outboxApp,
          store: 'analyticsQueue',
          name: 'Test outbox',
          describe: (s) => s,
          send: async (item) => {
            sent.push(item);
            // "second" is queued while "first" is being sent: this pass has already read the queue.
            if (item === 'first') await store.put('analyticsQueue', timeKey(Date.now() + 1), 'second');
          },
        });
        online = false;
        await outbox.add('first');
        online = true;
        let late: Promise<unknown> | undefined;
        afterPass = () => {
          let n = hops;
          const step = () => (n-- > 0 ? queueMicrotask(step) : void (late = outbox.flush()));
          step();
        };
        await outbox.flush();
        await eventually(
          async () => late,
          (p) => p !== undefined,
          1000,
        );
        await late;
        expect({ hops, sent }).toEqual({ hops, sent: ['first', 'second'] });
        expect(await outbox.pending()).toEqual([]);
        outbox.dispose();
      }
    } finally {
      delete nav.locks;
    }
  });

  it('keeps queued runs in the order they were made when the device clock goes back', async () => {
    const tag = `t${++seq}`;
    let now = Date.parse('2031-06-01T12:00:00Z');
    goOffline();
    const client = page({ clock: () => now });
    await client.App.Actions.run('record', { n: 1, tag });
    now -= 3_600_000; // the clock is set back an hour (NTP correction, the user, a time zone done wrong)
    await client.App.Actions.run('record', { n: 2, tag });
    now -= 1;
    await client.App.Actions.run('record', { n: 3, tag });
    now += 7_200_000; // and forward past the first one
    await client.App.Actions.run('record', { n: 4, tag });
    const mine = (r: { json?: unknown }) => (r.json as { payload: { n: number; tag: string } }).payload;
    expect((await queuedRequests(context())).filter((r) => mine(r).tag === tag).map((r) => mine(r).n)).toEqual([1, 2, 3, 4]);
    sentRuns.length = 0;
    goOnline();
    await eventually(
      () => entries('offline-runs').then((e) => e.filter((x) => x.data.tag === tag)),
      (e) => e.length >= 4,
    );
    expect([...new Set(sentRuns)]).toEqual([1, 2, 3, 4]);
  });

  it('device run logs keep the order they were made in when the clock goes back', async () => {
    const ctx = { ...context(), appId: () => 990_100 };
    let now = Date.parse('2031-06-01T12:00:00Z');
    ctx.now = () => now;
    const log = (n: number): ActionLog => ({
      id: null,
      createdAt: new Date(now).toISOString(),
      type: 'app.action.completed',
      data: { mode: 'on-demand', duration: n, actionId: 1, result: n },
    });
    await saveRunLog(ctx, log(1));
    now -= 60_000;
    await saveRunLog(ctx, log(2));
    expect((await pendingRunLogs(ctx)).map((p) => p.log.data.result)).toEqual([1, 2]);
  });

  it('another tab deleting the database: this page opens it again and keeps working', async () => {
    const tenant = await backend.server.createOrganization('deleted-db');
    goOffline();
    const { lines, logger } = quiet();
    const client = page({ appId: tenant.appId, authToken: tenant.apiToken, logger });
    client.App.Analytics.event({ category: 'c', action: 'before' });
    await client.App.Analytics.flush();
    // The other tab: its deletion waits until this page lets go of its connection.
    await deleteDB(localDbName(tenant.appId));
    client.App.Analytics.event({ category: 'c', action: 'after' });
    await client.App.Analytics.flush();
    expect(lines.filter((l) => /^(warn|error):/.test(l))).toEqual([]);
    // What the page queued after the deletion is in the database, for the next page load to send.
    const reader = await openDB(localDbName(tenant.appId), LOCAL_DB_VERSION);
    const queued = (await reader.getAll('analyticsQueue')) as { events: { data: { action: string } }[] }[];
    reader.close();
    expect(queued.map((q) => q.events.map((e) => e.data.action))).toEqual([['after']]);
  });

  it('another tab upgrading the database to a newer layout: this page keeps working in memory, warns once, leaves it alone', async () => {
    const tenant = await backend.server.createOrganization('upgraded-db');
    goOffline();
    const { lines, logger } = quiet();
    const client = page({ appId: tenant.appId, authToken: tenant.apiToken, logger });
    client.App.Analytics.event({ category: 'c', action: 'before' });
    await client.App.Analytics.flush();
    // A newer library in another tab upgrades the database (and keeps using it).
    const newer = await openDB(localDbName(tenant.appId), LOCAL_DB_VERSION + 1, {
      upgrade: (db, _old, _new, tx) => {
        for (const s of STORE_NAMES) if (!db.objectStoreNames.contains(s)) db.createObjectStore(s);
        void tx.objectStore('meta').put('newer', 'layout');
      },
    });
    for (const action of ['after', 'again']) {
      client.App.Analytics.event({ category: 'c', action });
      await client.App.Analytics.flush();
    }
    expect(lines.filter((l) => /^(warn|error):/.test(l))).toEqual([expect.stringMatching(/^warn: Local database .* upgraded by a newer version .* in memory/)]);
    // The newer tab's database is untouched: still its version, its data, the batch queued before.
    expect(newer.version).toBe(LOCAL_DB_VERSION + 1);
    expect(await newer.get('meta', 'layout')).toBe('newer');
    expect(await newer.count('analyticsQueue')).toBe(1);
    newer.close();
  });

  it(`keeps at most ${MAX_RUN_LOGS} device run logs, dropping the oldest with one warning`, async () => {
    const { lines, logger } = quiet();
    const ctx = { ...context(), appId: () => 990_200, logger: withOnce(logger) };
    const log = (n: number): ActionLog => ({
      id: null,
      createdAt: new Date(n).toISOString(),
      type: 'app.action.completed',
      data: { mode: 'on-demand', duration: 0, actionId: 1, result: n },
    });
    for (let n = 1; n <= MAX_RUN_LOGS + 5; n++) await saveRunLog(ctx, log(n));
    const pending = await pendingRunLogs(ctx);
    expect(pending).toHaveLength(MAX_RUN_LOGS);
    expect(pending[0]!.log.data.result).toBe(6);
    expect(pending.at(-1)!.log.data.result).toBe(MAX_RUN_LOGS + 5);
    expect(lines.filter((l) => l.startsWith('warn:'))).toEqual([expect.stringMatching(/more than 1000 .*dropping the oldest/)]);
  }, 30_000);
});
