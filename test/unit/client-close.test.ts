// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client, type ClientConfig, type ClientStatus } from '../../src/index.js';
import { localDbName, STATUS_CHANNEL } from '../../src/storage/client-store.js';
import { passConditionalRequests } from '../helpers/happy-dom-fetch.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually, rejection } from '../helpers/wait.js';

/**
 * `Client.close()` (docs/api.md "Closing a client") on the Node client (happy-dom, fake-indexeddb, the real backend):
 * calls after it fail with CLIENT_CLOSED, a device run in progress finishes and keeps its record, gathered analytics
 * events are stored, and the next client of the app (a later page load over the same IndexedDB) sends both.
 */
let online = true;
Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => online });
const realFetch = passConditionalRequests(globalThis.fetch);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

let b: TestBackend;
let appId: number;
let pageId: number;
const page = (extra: ClientConfig = {}): Client =>
  createClient({ logger: quiet, baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: realFetch, ...extra });

/** What the app's local database holds in `store` (read with a connection of its own, closed after). */
async function stored(store: 'runLogs' | 'analyticsQueue'): Promise<unknown[]> {
  const db = await openDB(localDbName(appId));
  try {
    return await db.getAll(store);
  } finally {
    db.close();
  }
}

/** Lets timers and I/O callbacks run a few times (what a closing client would use to finish too early). */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 20));
};

beforeAll(async () => {
  b = await startTestBackend({ limits: { runsPerMinute: 1000 } });
  appId = b.server.bootstrap.appId;
  const screen = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name: 'Closing', script: '' } });
  pageId = screen.body.page.id;
  const action = await b.client.App.Actions.create({ name: 'on-screen', environment: 'client', pageId });
  await b.client.App.Actions.publish(action.id, true);
});
afterAll(() => b.close());

describe('Client.close()', () => {
  it('fails every later call with CLIENT_CLOSED, and a second close() is the same promise', async () => {
    const client = page();
    await client.App.info(); // a working client first
    const closing = client.close();
    expect(client.close()).toBe(closing);
    const calls = {
      info: () => client.App.info(),
      get: () => client.App.Actions.get(),
      run: () => client.App.Actions.runWithResult('on-screen'),
      status: () => client.status(),
    };
    for (const [name, call] of Object.entries(calls))
      expect([
        name,
        await call().then(
          () => 'resolved',
          (error) => error,
        ),
      ]).toEqual([name, expect.objectContaining({ name: 'ClientError', code: 'CLIENT_CLOSED' })]);
    expect(() => client.App.Analytics.event({ category: 'closed', action: 'late' })).toThrow(expect.objectContaining({ code: 'CLIENT_CLOSED' }));
    await closing;
    expect((await rejection(client.http.request('GET', `v1/apps/${appId}`))).code).toBe('CLIENT_CLOSED');
  });

  it('lets a device run in progress finish with its record, stores gathered events, and leaves both to the next client', async () => {
    const tag = `close-${Date.now()}`;
    const screen = page({ pageId });
    let release: (() => void) | undefined;
    screen.Page.onRemoteExecution((payload) => new Promise((resolve) => (release = () => resolve({ got: payload.n }))));
    const handle = await screen.App.Actions.run('on-screen', { n: 5 });
    await eventually(async () => release !== undefined);
    screen.App.Analytics.event({ category: 'close', action: tag }); // gathered: stored after a delay, or at close
    let closed = false;
    const closing = screen.close().then(() => (closed = true));
    await turns();
    expect(closed).toBe(false); // waiting for the run
    release!();
    await closing;

    // Both are on the device, not sent: close() does not deliver.
    const records = (await stored('runLogs')) as { deviceKey?: string }[];
    expect(records.find((r) => r.deviceKey === handle.runId)).toMatchObject({ data: { result: { got: 5 } } });
    const batches = (await stored('analyticsQueue')) as { events: { data: { action: string } }[] }[];
    expect(batches.flatMap((x) => x.events.map((e) => e.data.action))).toContain(tag);
    const seenByBackend = async () =>
      (await b.api('GET', `/v1/apps/${appId}/analytics?type=event&limit=1000`)).body.events.some((e: { data: { action: string } }) => e.data.action === tag);
    await turns();
    expect(await seenByBackend()).toBe(false);

    // The next page load of the app sends them.
    const next = page();
    await eventually(seenByBackend, 20_000);
    const uploaded = await eventually(async () => (await next.App.Actions.getLogs({ runId: handle.runId })).logs[0], 20_000);
    expect(uploaded).toMatchObject({ data: { result: { got: 5 } } });
    await next.close();
  });

  it('closed at once after it was made: the start-up resume does nothing, nothing retries', async () => {
    const lines: string[] = [];
    const logger = { ...quiet, warn: (m: string) => void lines.push(m), error: (m: string) => void lines.push(m) };
    const client = createClient({ logger, baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: realFetch });
    await client.close(); // before the resume of queued work (a timer of 0 ms) has run
    await turns();
    expect(lines).toEqual([]);
    const heard: ClientStatus[] = [];
    client.onStatusChange((s) => heard.push(s));
    await turns();
    expect(heard).toEqual([]);
  });

  it('a device run still fetching its action when close() is called never starts', async () => {
    let fetching: (() => void) | undefined;
    const fetched = new Promise<void>((resolve) => (fetching = resolve));
    let hold: Promise<void> | undefined;
    const slowFetch: typeof fetch = async (input, init) => {
      if (hold && String(input instanceof Request ? input.url : input).includes('on-screen')) {
        fetching!();
        await hold;
      }
      return realFetch(input, init);
    };
    const screen = page({ pageId, fetch: slowFetch });
    let calls = 0;
    screen.Page.onRemoteExecution(() => ++calls);
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const run = screen.App.Actions.runWithResult('on-screen', { n: 1 });
    await fetched;
    const closing = screen.close();
    release();
    expect(await rejection(run)).toMatchObject({ code: 'CLIENT_CLOSED' });
    await closing;
    expect(calls).toBe(0);
  });

  it('stops onStatusChange listeners', async () => {
    const client = page();
    const heard: ClientStatus[] = [];
    client.onStatusChange((s) => heard.push(s));
    await eventually(async () => heard.length > 0);
    await client.close();
    const before = heard.length;
    online = false;
    window.dispatchEvent(new Event('offline'));
    await turns();
    online = true;
    window.dispatchEvent(new Event('online'));
    await turns();
    expect(heard.length).toBe(before);
  });

  /**
   * Another tab is flushing the app's queues and holds their Web Locks for as long as the test runs: a request waits
   * until its `signal` aborts, then rejects with an AbortError (as navigator.locks does).
   */
  function lockHeldByAnotherTab(asked: string[]) {
    const nav = window.navigator as unknown as { locks?: unknown };
    Object.defineProperty(nav, 'locks', {
      configurable: true,
      value: {
        request: (name: string, options: { signal?: AbortSignal }) => {
          asked.push(name);
          return new Promise((_, reject) =>
            options.signal?.addEventListener('abort', () => reject(new DOMException('The lock request was aborted', 'AbortError'))),
          );
        },
      },
    });
    return () => delete nav.locks;
  }

  it("does not wait for a queue's lock that another tab holds", async () => {
    const client = page();
    client.App.Analytics.event({ category: 'close', action: 'locked' });
    const asked: string[] = [];
    const release = lockHeldByAnotherTab(asked);
    try {
      let closed = false;
      const closing = client.close().then(() => (closed = true));
      await eventually(async () => closed, 10_000);
      await closing;
      expect(asked).toEqual([]);
      // The gathered event was stored for the app's next client.
      expect(JSON.stringify(await stored('analyticsQueue'))).toContain('locked');
    } finally {
      release();
    }
  });

  it('ends a flush that was already waiting for that lock when close() is called', async () => {
    const client = page();
    client.App.Analytics.event({ category: 'close', action: 'waiting' });
    const asked: string[] = [];
    const release = lockHeldByAnotherTab(asked);
    try {
      const flushing = client.App.Analytics.flush().then(
        () => 'resolved',
        (error: Error) => error.name,
      );
      // The batch is stored (so the flush is the user's, not the start-up resume's) and its flush waits for the lock.
      await eventually(async () => JSON.stringify(await stored('analyticsQueue')).includes('waiting'), 10_000);
      await eventually(async () => asked.some((name) => name.endsWith(':analyticsQueue')), 10_000);
      const before = asked.length;
      let closed = false;
      const closing = client.close().then(() => (closed = true));
      await eventually(async () => closed, 10_000);
      await closing;
      expect(await flushing).toBe('AbortError');
      expect(asked).toHaveLength(before); // no lock asked for after close()
      expect(JSON.stringify(await stored('analyticsQueue'))).toContain('waiting');
    } finally {
      release();
    }
  });

  it('a flush that delivered everything resolves though close() came while it ran', async () => {
    let hold: Promise<void> | undefined;
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const slowAnswers: typeof fetch = async (input, init) => {
      const response = await realFetch(input, init);
      if (hold && String(input instanceof Request ? input.url : input).includes('/analytics')) {
        arrived();
        await hold; // the backend has the batch; its answer is held back
      }
      return response;
    };
    const client = page({ fetch: slowAnswers });
    await client.App.Analytics.flush(); // what earlier tests left queued is sent first
    expect(await stored('analyticsQueue')).toEqual([]);
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    client.App.Analytics.event({ category: 'close', action: 'delivered' });
    const flushing = client.App.Analytics.flush().then(
      () => 'resolved',
      (error: { code?: string; name?: string }) => error.code ?? error.name,
    );
    await reached;
    const closing = client.close(); // asks the queue for one more flush
    await turns();
    release();
    expect(await flushing).toBe('resolved');
    await closing;
    // Sent, and nothing is left for the next client.
    expect(await stored('analyticsQueue')).toEqual([]);
  });

  it("tells the app's other tabs about what close() stores", async () => {
    const client = page();
    await turns(); // the start-up resume is done
    const heard: unknown[] = [];
    const otherTab = new BroadcastChannel(STATUS_CHANNEL);
    otherTab.onmessage = (message) => heard.push(message.data);
    try {
      client.App.Analytics.event({ category: 'close', action: 'told' }); // gathered: stored by close()
      await client.close();
      expect(JSON.stringify(await stored('analyticsQueue'))).toContain('told');
      await eventually(async () => heard.length > 0, 10_000);
    } finally {
      otherTab.close();
    }
  });

  it("leaves none of the page's online listeners behind, also after a late Analytics.flush()", async () => {
    const listening = new Set<unknown>();
    const add = window.addEventListener.bind(window);
    const remove = window.removeEventListener.bind(window);
    window.addEventListener = ((type: string, fn: unknown, options?: unknown) => {
      if (type === 'online') listening.add(fn);
      return add(type as 'online', fn as () => void, options as boolean);
    }) as typeof window.addEventListener;
    window.removeEventListener = ((type: string, fn: unknown, options?: unknown) => {
      if (type === 'online') listening.delete(fn);
      return remove(type as 'online', fn as () => void, options as boolean);
    }) as typeof window.removeEventListener;
    try {
      const client = page();
      await client.App.Actions.get(); // the actions list listens for the network coming back
      client.App.Analytics.event({ category: 'close', action: 'gathered' });
      await client.App.Analytics.flush(); // the analytics queue too
      client.onStatusChange(() => {}); // and the status watch
      expect(listening.size).toBeGreaterThanOrEqual(3);
      await client.close();
      expect((await rejection(client.App.Analytics.flush())).code).toBe('CLIENT_CLOSED');
      expect(listening.size).toBe(0);
    } finally {
      window.addEventListener = add;
      window.removeEventListener = remove;
    }
  });
});
