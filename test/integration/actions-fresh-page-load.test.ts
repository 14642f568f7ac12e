// @vitest-environment node
// Node, not happy-dom: the backend runs in this process, and happy-dom's fetch cache cannot take a 304.
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type Client, type ClientConfig } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Issue 13 item 5: a page load revalidates the cached actions list (If-None-Match → 304) before its first
 * analytics event is matched, waiting at most `limits.actionsRevalidateMs`; offline it uses the cache at once.
 * Every "page load" is a new client over the same IndexedDB (fake-indexeddb), on the real backend over HTTP.
 */

/** What the device's network did: each request for the actions list, with what it sent and got. */
interface ListRequest {
  ifNoneMatch: string | null;
  status: number | 'failed';
  etag: string | null;
}
const listRequests: ListRequest[] = [];
/** Delay (ms) before the actions list request leaves the device. */
let listDelay = 0;
/** The actions list request fails as with no network (other requests go through). */
let listFails = false;
let online = true;
// The device's idea of being online (src/storage/connectivity.ts reads navigator.onLine; Node 20 has no navigator).
if (!globalThis.navigator) Object.defineProperty(globalThis, 'navigator', { configurable: true, value: {} });
Object.defineProperty(globalThis.navigator, 'onLine', { configurable: true, get: () => online });

/** The device's fetch: the real one, observed (and delayed or cut for the actions list when a test says so). */
const deviceFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init);
  if (!/\/tasks$/.test(new URL(request.url).pathname) || request.method !== 'GET') return fetch(request);
  const entry: ListRequest = { ifNoneMatch: request.headers.get('If-None-Match'), status: 'failed', etag: null };
  listRequests.push(entry);
  if (listFails) throw new TypeError('Failed to fetch');
  if (listDelay) await new Promise((r) => setTimeout(r, listDelay));
  const response = await fetch(request);
  entry.status = response.status;
  entry.etag = response.headers.get('ETag');
  return response;
};

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe('fresh actions on a new page load', () => {
  let b: TestBackend;
  let appId: number;
  let seq = 0;

  /** A page load: a new client (new actions cache instance) over the shared IndexedDB. */
  const page = (config: ClientConfig = {}): Client =>
    createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: deviceFetch, logger: quiet, ...config });
  const hits = async (tag: string) => {
    const ds = await b.client.DataSources.connect('fresh-hits');
    return (await ds.find({})).filter((e) => e.data.tag === tag).map((e) => e.data.by as string);
  };
  /** Publishes a client action that records `{ tag, by: name }` for events `{ category: 'fresh', action: name }`. */
  async function publishRecorder(name: string) {
    const action = await b.studio.App.Actions.create({
      name,
      environment: 'client',
      triggers: [{ trigger: 'analytics', where: { type: 'analytics.event', data: { category: 'fresh', action: name } } }],
      functions: [
        {
          functionPackage: 'com.client.function.insert-entry',
          settings: { dataSourceName: 'fresh-hits', data: { tag: '{{ event.data.tag }}', by: name } },
        },
      ],
    });
    await b.studio.App.Actions.publish(action.id, true);
    return action;
  }

  beforeAll(async () => {
    b = await startTestBackend();
    appId = b.server.bootstrap.appId;
    await b.studio.DataSources.create({ name: 'fresh-hits' });
  });
  afterAll(() => b?.close());
  beforeEach(() => {
    listDelay = 0;
    listFails = false;
    online = true;
  });

  it('an action published after one page loaded runs on the next page loaded a minute later (cache under 5 minutes old)', async () => {
    const tag = `t${++seq}`;
    // Page A loads the list (and stores it) with its first event.
    const a = page();
    a.App.Analytics.event({ category: 'fresh', action: 'first-publish', tag });
    await a.App.Analytics.idle();
    expect(await hits(tag)).toEqual([]);

    await publishRecorder('first-publish');

    // Page B, a minute later: the stored list is fresh by age, yet the backend is asked before the first event.
    listRequests.length = 0;
    const pageB = page({ clock: () => Date.now() + 60_000 });
    pageB.App.Analytics.event({ category: 'fresh', action: 'first-publish', tag });
    await pageB.App.Analytics.idle();
    expect(await hits(tag)).toEqual(['first-publish']);
    // It asked with the stored list's ETag and got the new list.
    expect(listRequests).toHaveLength(1);
    expect(listRequests[0]!.ifNoneMatch).toMatch(/^".+"$/);
    expect(listRequests[0]!.status).toBe(200);
    expect(listRequests[0]!.etag).not.toBe(listRequests[0]!.ifNoneMatch);
  });

  it('a page load with nothing changed sends If-None-Match, gets 304 and runs from the stored list', async () => {
    await publishRecorder('unchanged');
    const tag = `t${++seq}`;
    const c = page();
    c.App.Analytics.event({ category: 'fresh', action: 'unchanged', tag });
    await c.App.Analytics.idle();
    expect(await hits(tag)).toEqual(['unchanged']);

    listRequests.length = 0;
    const d = page();
    d.App.Analytics.event({ category: 'fresh', action: 'unchanged', tag });
    await d.App.Analytics.idle();
    expect(await hits(tag)).toEqual(['unchanged', 'unchanged']);
    expect(listRequests).toHaveLength(1);
    expect(listRequests[0]).toMatchObject({ status: 304 });
    expect(listRequests[0]!.ifNoneMatch).toBe(listRequests[0]!.etag);

    // Later events of the same page do not ask again (the list is fresh for 5 minutes).
    d.App.Analytics.event({ category: 'fresh', action: 'unchanged', tag });
    await d.App.Analytics.idle();
    expect(listRequests).toHaveLength(1);
  });

  it('a slow backend holds the first event no longer than the bound; its late answer applies when it comes', async () => {
    await publishRecorder('slow-old');
    const warm = page(); // stores a list holding slow-old
    warm.App.Analytics.pageView();
    await warm.App.Analytics.idle();
    await publishRecorder('slow-new'); // not in the stored list

    const tag = `t${++seq}`;
    listDelay = 4000;
    listRequests.length = 0;
    const bound = 300;
    const e = page({ limits: { actionsRevalidateMs: bound } });
    const started = Date.now();
    e.App.Analytics.event({ category: 'fresh', action: 'slow-old', tag });
    e.App.Analytics.event({ category: 'fresh', action: 'slow-new', tag }); // matched against the stored list: no run
    await e.App.Analytics.idle();
    const waited = Date.now() - started;
    expect(await hits(tag)).toEqual(['slow-old']);
    expect(waited).toBeGreaterThanOrEqual(bound - 20); // it did wait for the revalidation…
    expect(waited).toBeLessThan(listDelay); // …but not for the slow answer
    expect(listRequests[0]!.status).toBe('failed'); // still under way

    // The answer arrives later and replaces the list: the next matching event runs the new action.
    const done = await eventually(async () => {
      e.App.Analytics.event({ category: 'fresh', action: 'slow-new', tag });
      await e.App.Analytics.idle();
      return (await hits(tag)).includes('slow-new');
    }, 15_000);
    expect(done).toBe(true);
    expect(listRequests).toHaveLength(1);
    expect(listRequests[0]!.status).toBe(200);
    expect((await hits(tag)).sort()).toEqual(['slow-new', 'slow-old']); // the new action ran once, for the first event after the answer
  });

  it('offline, the stored list answers at once: no request, no wait for the bound', async () => {
    await publishRecorder('offline');
    const warm = page();
    warm.App.Analytics.pageView();
    await warm.App.Analytics.idle();

    // navigator.onLine is false (the run's own insert still reaches the backend: what counts is that the
    // list is not asked for). A bound longer than the test's time limit: waiting for it would fail the test.
    const tag = `t${++seq}`;
    online = false;
    listRequests.length = 0;
    const f = page({ limits: { actionsRevalidateMs: 60_000 } });
    f.App.Analytics.event({ category: 'fresh', action: 'offline', tag });
    await f.App.Analytics.idle();
    expect(await hits(tag)).toEqual(['offline']);
    expect(listRequests).toEqual([]);

    // Online for the browser, but the request fails: the stored list answers at once too.
    const tag2 = `t${++seq}`;
    online = true;
    listFails = true;
    const g = page({ limits: { actionsRevalidateMs: 60_000 } });
    g.App.Analytics.event({ category: 'fresh', action: 'offline', tag: tag2 });
    await g.App.Analytics.idle();
    expect(await hits(tag2)).toEqual(['offline']);
    expect(listRequests).toEqual([{ ifNoneMatch: expect.stringMatching(/^".+"$/), status: 'failed', etag: null }]);
  });
});
