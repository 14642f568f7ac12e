// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type Client, type ClientConfig, type ClientStatus, type RunHandle } from '../../src/index.js';
import { passConditionalRequests } from '../helpers/happy-dom-fetch.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually, rejection } from '../helpers/wait.js';

/**
 * Issue 18 items 1 and 6 on the Node client (happy-dom, fake-indexeddb, the real backend): `run()` resolves with a
 * handle that `getRun` follows for server runs, device runs and runs queued offline; `getLogs({ runId })`;
 * `Client.status()` and `onStatusChange` count the work queued on the device as it is queued and drained.
 */
let network: 'up' | 'down' = 'up';
let online = true;
/** Device run log uploads (`POST tasks/logs { logs }`) fail while set, as on a flaky network. */
let blockLogUploads = false;
Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => online });
const realFetch = passConditionalRequests(globalThis.fetch);
const deviceFetch: typeof fetch = async (input, init) => {
  if (network === 'down') throw new TypeError('Failed to fetch');
  const request = input instanceof Request ? input : new Request(input, init);
  if (blockLogUploads && request.method === 'POST' && request.url.endsWith('/tasks/logs') && (await request.clone().text()).includes('"logs"'))
    throw new TypeError('Failed to fetch');
  return realFetch(input, init);
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
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

let b: TestBackend;
let appId: number;
let pageId: number;
const page = (extra: ClientConfig = {}): Client =>
  createClient({ logger: quiet, baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: deviceFetch, ...extra });

beforeAll(async () => {
  b = await startTestBackend({ limits: { runsPerMinute: 1000 } });
  appId = b.server.bootstrap.appId;
  const screen = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name: 'Handles', script: '' } });
  pageId = screen.body.page.id;
  for (const definition of [
    { name: 'triple', functions: [fn('return', { value: '{{ n * 3 }}' })] },
    { name: 'fails', functions: [fn('script', { code: 'throw new Error("no luck")' })] },
    { name: 'on-device', environment: 'client' as const, functions: [fn('return', { value: 'device {{ n }}' })] },
    { name: 'on-screen', environment: 'client' as const, pageId },
  ]) {
    const action = await b.client.App.Actions.create(definition);
    await b.client.App.Actions.publish(action.id, true);
  }
});
afterAll(() => b.close());
beforeEach(() => goOnline());

const ended = (client: Client, runId: RunHandle['runId']) =>
  eventually(async () => {
    const run = await client.App.Actions.getRun(runId);
    return (run.status === 'completed' || run.status === 'failed') && run;
  }, 30_000);

describe('run handles', () => {
  it('a server run: run() resolves with the numeric run id; getRun follows it to its result', async () => {
    const client = page();
    const handle = await client.App.Actions.run('triple', { n: 14 });
    expect(handle).toMatchObject({ runId: expect.any(Number), status: 'queued', idempotencyKey: expect.any(String) });
    const run = await ended(client, handle.runId);
    expect(run).toMatchObject({ runId: handle.runId, actionName: 'triple', source: 'server', status: 'completed', result: 42, logId: expect.any(Number) });
    expect(run.trace).toHaveLength(1);
    const logs = await client.App.Actions.getLogs({ runId: handle.runId });
    expect(logs.logs.map((l) => l.id)).toEqual([run.logId]);

    const failed = await ended(client, (await client.App.Actions.run('fails')).runId);
    expect(failed).toMatchObject({ status: 'failed', error: { errorMessage: expect.stringContaining('no luck') } });
  });

  it('with a client token, getRun reads the runs this client queued (it sends their Idempotency-Key), and no other', async () => {
    const visitor = page({ authToken: b.clientToken });
    const handle = await visitor.App.Actions.run('triple', { n: 2 });
    expect((await ended(visitor, handle.runId)).result).toBe(6);
    // Another visitor (same public token) cannot read it by counting run ids.
    const other = page({ authToken: b.clientToken });
    expect((await rejection(other.App.Actions.getRun(handle.runId))).code).toBe('RUN_NOT_FOUND');
    expect((await rejection(other.App.Actions.getRun({ runId: handle.runId, idempotencyKey: 'guessed' }))).code).toBe('RUN_NOT_FOUND');
    // The same page after a reload (a new client) reads it with the whole handle it kept: the key goes along.
    const kept = JSON.parse(JSON.stringify(handle)) as RunHandle;
    expect(await page({ authToken: b.clientToken }).App.Actions.getRun(kept)).toMatchObject({ runId: handle.runId, status: 'completed', result: 6 });
  });

  it('with a client token, a failed runWithResult is followed by the run its error names', async () => {
    const visitor = page({ authToken: b.clientToken });
    const error = (await rejection(visitor.App.Actions.runWithResult('fails'))) as Error & { code: string; details: { runId: number; idempotencyKey: string } };
    expect(error.code).toBe('FUNCTION_FAILED');
    expect(error.details).toMatchObject({ runId: expect.any(Number), idempotencyKey: expect.any(String) });
    expect(await visitor.App.Actions.getRun(error.details.runId)).toMatchObject({ status: 'failed', error: { code: 'FUNCTION_FAILED' } });
    expect(await page({ authToken: b.clientToken }).App.Actions.getRun(error.details)).toMatchObject({ status: 'failed' });
  });

  it('with a client token, a run queued offline is read by its backend run id once sent, and by its handle anywhere', async () => {
    const visitor = page({ authToken: b.clientToken });
    await visitor.App.Actions.get();
    goOffline();
    const handle = await visitor.App.Actions.run('triple', { n: 4 });
    expect(handle.status).toBe('queued-offline');
    goOnline();
    const run = await ended(visitor, handle.runId);
    expect(run).toMatchObject({ runId: expect.any(Number), result: 12 });
    // The numeric id the backend gave: this client sends the key it queued the run with.
    expect(await visitor.App.Actions.getRun(run.runId)).toMatchObject({ runId: run.runId, result: 12 });
    expect((await rejection(page({ authToken: b.clientToken }).App.Actions.getRun(run.runId))).code).toBe('RUN_NOT_FOUND');
    expect(await page({ authToken: b.clientToken }).App.Actions.getRun({ runId: run.runId, idempotencyKey: handle.idempotencyKey })).toMatchObject({
      result: 12,
    });
  });

  it('a device run: running while it runs, then its outcome from the device record, then from the uploaded one', async () => {
    const screen = page({ pageId, environment: 'live' });
    let release!: (value: unknown) => void;
    screen.Page.onRemoteExecution((payload) => new Promise((resolve) => (release = () => resolve({ got: payload.n }))));
    const handle = await screen.App.Actions.run('on-screen', { n: 7 });
    expect(handle).toEqual({ runId: expect.stringMatching(/^dev-/), status: 'running' });
    await eventually(async () => release !== undefined);
    const running = await screen.App.Actions.getRun(handle.runId);
    expect(running).toMatchObject({ runId: handle.runId, source: 'device', status: 'running', actionName: 'on-screen', finishedAt: null, logId: null });
    release(undefined);
    const done = await ended(screen, handle.runId);
    expect(done).toMatchObject({ status: 'completed', result: { got: 7 }, source: 'device' });
    // Once uploaded, the backend's record (with its id) answers, and getLogs finds it by run id.
    const uploaded = await eventually(async () => {
      const run = await screen.App.Actions.getRun(handle.runId);
      return run.logId !== null && run;
    });
    expect(uploaded.logId).toBeGreaterThan(0);
    expect(uploaded).toMatchObject({ runId: handle.runId, status: 'completed', result: { got: 7 }, actionName: 'on-screen' });
    expect((await screen.App.Actions.getLogs({ runId: handle.runId })).logs.map((l) => l.id)).toEqual([uploaded.logId]);
    // Another client of the app (a later page load) reads it from the backend.
    expect((await page().App.Actions.getRun(handle.runId)).result).toEqual({ got: 7 });
  });

  it('a device run whose log cannot be uploaded yet: its record answers from the device until it is', async () => {
    const client = page();
    blockLogUploads = true;
    const handle = await client.App.Actions.run('on-device', { n: 3 });
    expect(handle.status).toBe('running');
    const done = await ended(client, handle.runId);
    expect(done).toMatchObject({ status: 'completed', result: 'device 3', logId: null, source: 'device', actionId: expect.any(Number) });
    blockLogUploads = false;
    goOnline(); // the network is back: the upload is retried
    const uploaded = await eventually(async () => (await client.App.Actions.getRun(handle.runId)).logId);
    expect(uploaded).toBeGreaterThan(0);
  });

  it('a server run queued offline: queued-offline with its key until sent, then the backend run', async () => {
    const client = page();
    await client.App.Actions.get();
    goOffline();
    const handle = await client.App.Actions.run('triple', { n: 5 }, { idempotencyKey: `offline-${Date.now()}` });
    expect(handle).toEqual({ runId: `queued:${handle.idempotencyKey}`, status: 'queued-offline', idempotencyKey: handle.idempotencyKey });
    expect(await client.App.Actions.getRun(handle.runId)).toMatchObject({ runId: handle.runId, status: 'queued-offline', queuedAt: expect.any(String) });
    goOnline();
    const run = await ended(client, handle.runId);
    expect(run).toMatchObject({ runId: expect.any(Number), status: 'completed', result: 15 });
    // Another client of the app (another tab, a later page load) finds it by the key of its handle.
    expect(await page().App.Actions.getRun(handle.runId)).toMatchObject({ runId: run.runId, result: 15 });
  });

  it('getRun: RUN_NOT_FOUND for a run unknown to the app, INVALID_ARGUMENT for what is no run id', async () => {
    const client = page();
    for (const runId of [999_999, 'dev-00000000-0000-4000-8000-000000000000', 'queued:never-made'])
      expect((await rejection(client.App.Actions.getRun(runId))).code, String(runId)).toBe('RUN_NOT_FOUND');
    for (const runId of [0, -1, 1.5, 'abc', null, {}] as never[])
      expect((await rejection(client.App.Actions.getRun(runId))).code, String(runId)).toBe('INVALID_ARGUMENT');
    expect((await rejection(client.App.Actions.getLogs({ runId: 'abc' }))).code).toBe('INVALID_ARGUMENT');
  });
});

describe('Client.status and onStatusChange', () => {
  it('counts queued runs, analytics batches and log uploads as they are queued offline and drained online', async () => {
    const client = page();
    const seen: ClientStatus[] = [];
    const stop = client.onStatusChange((s) => seen.push(s));
    await eventually(async () => seen.length > 0);
    expect(seen[0]).toEqual({ online: true, queuedRuns: 0, analyticsBatches: 0, logUploads: 0 });
    blockLogUploads = true;
    await client.App.Actions.runWithResult('on-device', { n: 1 });
    await eventually(async () => seen.at(-1)?.logUploads === 1);
    goOffline();
    await eventually(async () => seen.at(-1)?.online === false);
    await client.App.Actions.run('triple', { n: 1 });
    await client.App.Actions.run('triple', { n: 2 });
    client.App.Analytics.event({ category: 'status', action: 'test' });
    await client.App.Analytics.flush();
    const queued = await client.status();
    expect(queued).toEqual({ online: false, queuedRuns: 2, analyticsBatches: 1, logUploads: 1 });
    await eventually(async () => JSON.stringify(seen.at(-1)) === JSON.stringify(queued));
    blockLogUploads = false;
    goOnline();
    await eventually(async () => {
      const s = seen.at(-1)!;
      return s.online && s.queuedRuns === 0 && s.analyticsBatches === 0 && s.logUploads === 0;
    });
    expect(await client.status()).toEqual({ online: true, queuedRuns: 0, analyticsBatches: 0, logUploads: 0 });
    // The counts went up one at a time and back down; no report repeats the one before it.
    for (let i = 1; i < seen.length; i++) expect(seen[i]).not.toEqual(seen[i - 1]);
    expect(Math.max(...seen.map((s) => s.queuedRuns))).toBe(2);
    stop();
    const count = seen.length;
    goOffline();
    await new Promise((r) => setTimeout(r, 50));
    expect(seen.length).toBe(count);
  });

  it('a listener that subscribes after the last one left still hears the changes that follow', async () => {
    const client = page();
    const first: ClientStatus[] = [];
    const stopFirst = client.onStatusChange((s) => first.push(s));
    await eventually(async () => first.length > 0);
    stopFirst();
    goOffline();
    await client.App.Actions.run('triple', { n: 3 });
    const later: ClientStatus[] = [];
    const stop = client.onStatusChange((s) => later.push(s));
    await eventually(async () => later.at(-1)?.queuedRuns === 1 && later.at(-1)?.online === false);
    goOnline();
    await eventually(async () => later.at(-1)?.online === true && later.at(-1)?.queuedRuns === 0);
    stop();
  });

  it("hears another tab's queue changes (the app's IndexedDB queues are shared; the notice comes over a BroadcastChannel)", async () => {
    const watching = page();
    const otherTab = page();
    await otherTab.App.Actions.get();
    const seen: ClientStatus[] = [];
    const stop = watching.onStatusChange((s) => seen.push(s));
    await eventually(async () => seen.length > 0);
    goOffline();
    await eventually(async () => seen.at(-1)?.online === false);
    const count = seen.length;
    // Another tab (another client of the app on this origin) queues a run while offline.
    await otherTab.App.Actions.run('triple', { n: 6 });
    await eventually(async () => seen.at(-1)?.queuedRuns === 1);
    expect(seen.length).toBe(count + 1);
    // It sends it when back online: this tab hears the queue drain.
    goOnline();
    await eventually(async () => seen.at(-1)?.online === true && seen.at(-1)?.queuedRuns === 0);
    stop();
  });

  it('status without an app configured is online with nothing queued', async () => {
    const bare = createClient({ logger: quiet, baseUrl: b.url, fetch: deviceFetch });
    expect(await bare.status()).toEqual({ online: true, queuedRuns: 0, analyticsBatches: 0, logUploads: 0 });
  });
});
