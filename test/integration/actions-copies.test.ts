// @vitest-environment node
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { rejection } from '../helpers/wait.js';

/**
 * Issue 17: a device run uses the copy of its action that this client fetched or revalidated within
 * `actionMaxAgeMs`; an older copy is revalidated (`If-None-Match` → 304 without a body); this client's own
 * changes drop its copies at once (docs/actions.md "Action copies on the device"). Through the public API against
 * the real backend; the client's `fetch` is the real one, wrapped to see which requests reach the backend.
 */
const ret = (value: string) => [{ functionPackage: 'com.client.function.return', settings: { value } }];
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

interface Seen {
  path: string;
  status: number;
  ifNoneMatch: string | null;
  etag: string | null;
}

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend();
  appId = b.server.bootstrap.appId;
});
afterAll(() => b?.close());

/** A client with the API token, a clock the test moves, and a record of its `GET tasks/<name>` requests. */
function runner(actionMaxAgeMs?: number) {
  const clock = { now: Date.now() };
  const gets: Seen[] = [];
  const watched: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    const url = new URL(request.url);
    if (request.method === 'GET' && /\/tasks\/[^/]+$/.test(url.pathname))
      gets.push({ path: url.pathname, status: response.status, ifNoneMatch: request.headers.get('If-None-Match'), etag: response.headers.get('ETag') });
    return response;
  };
  const client = createClient({
    baseUrl: b.url,
    appId,
    authToken: b.server.bootstrap.apiToken,
    clock: () => clock.now,
    fetch: watched,
    logger: quiet,
    ...(actionMaxAgeMs === undefined ? {} : { actionMaxAgeMs }),
  });
  return { client, clock, gets };
}

async function publish(name: string, value: string) {
  const action = await b.studio.App.Actions.create({ name, environment: 'client', functions: ret(value) });
  await b.studio.App.Actions.publish(action.id, true);
  return action;
}

describe('action copies on the device', () => {
  it('uses a copy younger than actionMaxAgeMs (default 1,000 ms), revalidates an older one (304), sees another client’s publish after that', async () => {
    const action = await publish('copy-a', 'v1');
    const { client, clock, gets } = runner();
    expect(await client.App.Actions.runWithResult('copy-a')).toBe('v1');
    expect(gets).toHaveLength(1);
    expect(gets[0]).toMatchObject({ status: 200, ifNoneMatch: null });
    const tag = gets[0]!.etag;
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);

    // Within the max age: no request at all.
    clock.now += 999;
    expect(await client.App.Actions.runWithResult('copy-a')).toBe('v1');
    expect(gets).toHaveLength(1);

    // Older: revalidated, and the backend confirms it without a body.
    clock.now += 1;
    expect(await client.App.Actions.runWithResult('copy-a')).toBe('v1');
    expect(gets).toHaveLength(2);
    expect(gets[1]).toMatchObject({ status: 304, ifNoneMatch: tag, etag: tag });

    // Another client publishes v2: this client keeps its confirmed copy for up to the max age, then sees v2.
    await b.studio.App.Actions.update(action.id, { functions: ret('v2') });
    await b.studio.App.Actions.publish(action.id, true);
    clock.now += 500;
    expect(await client.App.Actions.runWithResult('copy-a')).toBe('v1');
    expect(gets).toHaveLength(2);
    clock.now += 500;
    expect(await client.App.Actions.runWithResult('copy-a')).toBe('v2');
    expect(gets).toHaveLength(3);
    expect(gets[2]).toMatchObject({ status: 200, ifNoneMatch: tag });
    expect(gets[2]!.etag).not.toBe(tag);
  });

  it('drops its copies when this client changes an action: its own update, publish and removal are seen at once', async () => {
    const { client, gets } = runner(60_000);
    const action = await client.App.Actions.create({ name: 'copy-b', environment: 'client', functions: ret('v1') });
    await client.App.Actions.publish(action.id, true);
    expect(await client.App.Actions.runWithResult('copy-b')).toBe('v1');
    expect(await client.App.Actions.runWithResult('copy-b')).toBe('v1');
    expect(gets).toHaveLength(1);

    await client.App.Actions.update(action.id, { functions: ret('v2') });
    await client.App.Actions.publish(action.id, true);
    expect(await client.App.Actions.runWithResult('copy-b')).toBe('v2');
    expect(gets).toHaveLength(2);

    await client.App.Actions.publish(action.id, false);
    expect((await rejection(client.App.Actions.runWithResult('copy-b'))).code).toBe('ACTION_NOT_PUBLISHED');
    await client.App.Actions.publish(action.id, true);
    expect(await client.App.Actions.runWithResult('copy-b')).toBe('v2');

    await client.App.Actions.remove(action.id);
    expect((await rejection(client.App.Actions.runWithResult('copy-b'))).status).toBe(404);
    // A refused run keeps no copy: the next one asks again.
    const asked = gets.length;
    await rejection(client.App.Actions.runWithResult('copy-b'));
    expect(gets.length).toBe(asked + 1);
  });

  it('actionMaxAgeMs 0: every run asks the backend (304 while unchanged), so another client’s publish is seen at once', async () => {
    const action = await publish('copy-c', 'v1');
    const { client, gets } = runner(0);
    expect(await client.App.Actions.runWithResult('copy-c')).toBe('v1');
    expect(await client.App.Actions.runWithResult('copy-c')).toBe('v1');
    expect(gets.map((g) => g.status)).toEqual([200, 304]);
    await b.studio.App.Actions.update(action.id, { functions: ret('v2') });
    await b.studio.App.Actions.publish(action.id, true);
    expect(await client.App.Actions.runWithResult('copy-c')).toBe('v2');
    expect(gets.map((g) => g.status)).toEqual([200, 304, 200]);
  });

  it('refuses a bad actionMaxAgeMs', () => {
    for (const actionMaxAgeMs of [-1, Number.NaN, '5' as never])
      expect(() => createClient({ baseUrl: b.url, appId, actionMaxAgeMs })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });
});

describe('GET tasks/:name: ETag and 304', () => {
  const one = (name: string, query: string, init: { token?: string; headers?: Record<string, string> } = {}) =>
    b.api('GET', `/v1/apps/${appId}/tasks/${name}?${query}`, init);
  const LIVE = 'environment=live&view=definitions';

  it('answers a strong ETag of what it returns and 304 without a body to a matching If-None-Match', async () => {
    const action = await publish('etag-one', 'v1');
    const first = await one('etag-one', LIVE);
    expect(first.status).toBe(200);
    expect(first.body.action).toMatchObject({ name: 'etag-one', functions: ret('v1') });
    expect(first.body.action).not.toHaveProperty('lastRunAt');
    expect(first.headers.get('Cache-Control')).toBe('private, no-cache');
    const tag = first.headers.get('ETag')!;
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
    const again = await one('etag-one', LIVE, { headers: { 'If-None-Match': tag } });
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();
    expect(again.headers.get('ETag')).toBe(tag);
    // By id too; the full view (with the run state) has a tag of its own.
    expect((await one(String(action.id), LIVE, { headers: { 'If-None-Match': tag } })).status).toBe(304);
    const full = await one('etag-one', 'environment=live', { headers: { 'If-None-Match': tag } });
    expect(full.status).toBe(200);
    expect(full.body.action).toHaveProperty('lastRunAt');
    expect((await one('etag-one', 'view=other')).status).toBe(400);

    // A new publish changes the tag.
    await b.studio.App.Actions.update(action.id, { functions: ret('v2') });
    await b.studio.App.Actions.publish(action.id, true);
    const changed = await one('etag-one', LIVE, { headers: { 'If-None-Match': tag } });
    expect(changed.status).toBe(200);
    expect(changed.body.action.functions).toEqual(ret('v2'));
    expect(changed.headers.get('ETag')).not.toBe(tag);
  });

  it('answers 304 only after the caller’s access is checked: a client token gets its refusal, not a 304', async () => {
    const action = await publish('etag-access', 'v1');
    const viewer = await one('etag-access', 'environment=viewer&view=definitions');
    const tag = viewer.headers.get('ETag')!;
    expect((await one('etag-access', 'environment=viewer&view=definitions', { headers: { 'If-None-Match': tag } })).status).toBe(304);
    // The client token may not read working copies: 403 whatever it holds.
    const refused = await one('etag-access', 'environment=viewer&view=definitions', { token: b.clientToken, headers: { 'If-None-Match': tag } });
    expect(refused.status).toBe(403);
    // Unpublished: the live copy is gone for every caller, a held tag included.
    const live = (await one('etag-access', LIVE, { token: b.clientToken })).headers.get('ETag')!;
    await b.studio.App.Actions.publish(action.id, false);
    const gone = await one('etag-access', LIVE, { token: b.clientToken, headers: { 'If-None-Match': live } });
    expect(gone.status).toBe(422);
    expect(gone.body.error.code).toBe('ACTION_NOT_PUBLISHED');
  });
});
