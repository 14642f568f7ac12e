import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isApiError, isClientError, type Notification } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const RECIPIENT = '6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b';
const OTHER_RECIPIENT = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

const apiError = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isApiError(error), `expected an ApiError, got ${String(error)}`).toBe(true);
  return error as { status: number; code: string; message: string };
};

describe('notifications: create, update, list, delete', () => {
  let b: TestBackend;
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  const clock = () => now;
  let path: string;
  beforeAll(async () => {
    b = await startTestBackend({ clock });
    path = `/v1/apps/${b.server.bootstrap.appId}/notifications`;
  });
  afterAll(() => b.close());

  it('creates a draft by default with orderAt now, and answers 201 { notification }', async () => {
    const res = await b.api('PUT', path, { json: { data: { title: 'Hello' } } });
    expect(res.status).toBe(201);
    const n = res.body.notification;
    expect(n).toMatchObject({
      appId: b.server.bootstrap.appId,
      data: { title: 'Hello' },
      status: 'draft',
      orderAt: '2030-01-01T00:00:00.000Z',
      createdAt: '2030-01-01T00:00:00.000Z',
      updatedAt: '2030-01-01T00:00:00.000Z',
      deletedAt: null,
      publishedAt: null,
    });
    expect(n.id).toBeGreaterThan(0);
    expect('scope' in n).toBe(false); // broadcast: scope omitted
    expect('pushNotification' in n).toBe(false);
  });

  it('accepts orderAt as Unix seconds or ISO, and a single scope object as a one-element list', async () => {
    const a = await b.studio.Notifications.create({ data: { n: 1 }, orderAt: 1_900_000_000, scope: { topic: 'news' } });
    expect(a.orderAt).toBe(new Date(1_900_000_000_000).toISOString());
    expect(a.scope).toEqual([{ topic: 'news' }]);
    const c = await b.studio.Notifications.create({ data: { n: 2 }, orderAt: '2031-05-06T07:08:09Z', scope: [{ a: 1 }, { b: 2 }] });
    expect(c.orderAt).toBe('2031-05-06T07:08:09.000Z');
    expect(c.scope).toEqual([{ a: 1 }, { b: 2 }]);
    const d = await b.studio.Notifications.create({ data: { n: 3 }, orderAt: new Date('2032-01-01T00:00:00Z') });
    expect(d.orderAt).toBe('2032-01-01T00:00:00.000Z');
  });

  it('refuses every missing or wrongly typed create field with a 400 naming it, storing nothing', async () => {
    const before = await b.studio.Notifications.count({ includeDeleted: true });
    const cases: [unknown, string][] = [
      [{}, '"data"'],
      [{ data: 'x' }, '"data"'],
      [{ data: [1] }, '"data"'],
      [{ data: {}, status: 'live' }, '"status"'],
      [{ data: {}, status: 'scheduled' }, '"orderAt"'],
      [{ data: {}, orderAt: 'tomorrow' }, '"orderAt"'],
      [{ data: {}, orderAt: true }, '"orderAt"'],
      [{ data: {}, orderAt: -5 }, '"orderAt"'],
      [{ data: {}, scope: 'all' }, '"scope"'],
      [{ data: {}, scope: [] }, '"scope"'],
      [{ data: {}, scope: [{ a: 1 }, 3] }, '"scope[1]"'],
      [{ data: {}, scope: { a: { $bogus: 1 } } }, '"scope"'],
      [{ data: {}, scope: { $where: 'true' } }, '$where'],
      [{ data: {}, pushNotification: 'x' }, '"pushNotification"'],
      [{ data: {}, pushNotification: {} }, '"pushNotification.payload"'],
      [{ data: {}, pushNotification: { payload: { body: 'b' } } }, '"pushNotification.payload.title"'],
      [{ data: {}, pushNotification: { payload: { title: 1, body: 'b' } } }, '"pushNotification.payload.title"'],
      [{ data: {}, pushNotification: { payload: { title: 't' } } }, '"pushNotification.payload.body"'],
      [{ data: {}, pushNotification: { payload: { title: 't', body: 'b', badge: -1 } } }, '"pushNotification.payload.badge"'],
      [{ data: {}, pushNotification: { payload: { title: 't', body: 'b' }, subscriptions: 'all' } }, '"pushNotification.subscriptions"'],
      [{ data: {}, pushNotification: { payload: { title: 't', body: 'b' }, subscriptions: [0] } }, '"pushNotification.subscriptions[0]"'],
      [{ data: {}, pushNotification: { payload: { title: 't', body: 'b' }, subscriptions: [999] } }, '"pushNotification.subscriptions[0]"'],
      [{ data: {}, pushNotification: { payload: { title: 't', body: 'b' }, delayUntilTimestamp: 'soon' } }, '"pushNotification.delayUntilTimestamp"'],
      [{ data: {}, colour: 'red' }, '"colour"'],
    ];
    for (const [json, field] of cases) {
      const res = await b.api('PUT', path, { json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.message, JSON.stringify(json)).toContain(field);
    }
    expect((await b.api('PUT', path, { json: [1] })).status).toBe(400);
    expect((await b.api('PUT', path, { body: '{"data":', headers: { 'Content-Type': 'application/json' } })).status).toBe(400);
    expect(await b.studio.Notifications.count({ includeDeleted: true })).toBe(before);
  });

  it('the client refuses bad arguments before sending anything', async () => {
    for (const call of [
      () => b.client.Notifications.create({ data: 'x' as never }),
      () => b.client.Notifications.create({ data: {}, status: 'scheduled' }),
      () => b.client.Notifications.update(0, {}),
      () => b.client.Notifications.remove(-1),
      () => b.client.Notifications.markAsRead('not-a-guid', [1]),
      () => b.client.Notifications.markAsRead(RECIPIENT, []),
      () => b.client.Notifications.unreadCount('x'),
      () => b.client.Notifications.batch([]),
    ]) {
      const error = await call().catch((e: unknown) => e);
      expect(isClientError(error)).toBe(true);
    }
  });

  it('allows exactly the documented status moves and refuses the others with 422', async () => {
    const create = (status: 'draft' | 'published' | 'scheduled') =>
      b.studio.Notifications.create({ data: {}, status, orderAt: status === 'scheduled' ? now / 1000 + 3600 : undefined });
    const allowed: [string, string][] = [
      ['draft', 'published'],
      ['draft', 'scheduled'],
      ['scheduled', 'published'],
      ['scheduled', 'draft'],
      ['published', 'draft'],
    ];
    for (const [from, to] of allowed) {
      const n = await create(from as never);
      const updated = await b.studio.Notifications.update(n.id, { status: to as never, orderAt: to === 'scheduled' ? now / 1000 + 60 : undefined });
      expect(updated.status, `${from} → ${to}`).toBe(to);
    }
    const refused = await create('published');
    const error = await apiError(b.studio.Notifications.update(refused.id, { status: 'scheduled', orderAt: now / 1000 + 60 }));
    expect(error).toMatchObject({ status: 422, code: 'INVALID_STATUS_MOVE' });
    const same = await b.studio.Notifications.update(refused.id, { status: 'published' });
    expect(same.status).toBe('published');
    // draft → scheduled needs a publication time
    const draft = await create('draft');
    const missing = await apiError(b.studio.Notifications.update(draft.id, { status: 'scheduled' }));
    expect(missing.status).toBe(400);
    expect(missing.message).toContain('"orderAt"');
    expect((await b.studio.Notifications.list({ where: { id: draft.id } }))[0]!.status).toBe('draft');
  });

  it('publishedAt follows publication', async () => {
    const n = await b.studio.Notifications.create({ data: {} });
    now += 1000;
    const published = await b.studio.Notifications.update(n.id, { status: 'published' });
    expect(published.publishedAt).toBe(new Date(now).toISOString());
    expect(published.updatedAt).toBe(new Date(now).toISOString());
    const back = await b.studio.Notifications.update(n.id, { status: 'draft' });
    expect(back.publishedAt).toBeNull();
  });

  it('update: extendData false replaces data, true merges it; other fields stay unless given', async () => {
    const n = await b.studio.Notifications.create({ data: { a: 1, b: 2 }, scope: { topic: 't' }, status: 'published' });
    const replaced = await b.studio.Notifications.update(n.id, { data: { c: 3 } });
    expect(replaced.data).toEqual({ c: 3 });
    expect(replaced.status).toBe('published');
    expect(replaced.scope).toEqual([{ topic: 't' }]);
    const merged = await b.studio.Notifications.update(n.id, { data: { d: 4, c: 5 }, extendData: true });
    expect(merged.data).toEqual({ c: 5, d: 4 });
    const explicitFalse = await b.studio.Notifications.update(n.id, { data: { e: 6 }, extendData: false });
    expect(explicitFalse.data).toEqual({ e: 6 });
    const broadcast = await b.studio.Notifications.update(n.id, { scope: null, orderAt: '2035-01-01T00:00:00Z' });
    expect(broadcast.scope).toBeUndefined();
    expect(broadcast.orderAt).toBe('2035-01-01T00:00:00.000Z');
    expect(broadcast.data).toEqual({ e: 6 });
  });

  it('update refuses bad fields with 400 naming them, unknown ids with 404, and leaves the notification unchanged', async () => {
    const n = await b.studio.Notifications.create({ data: { keep: true } });
    for (const [json, field] of [
      [{ data: 1 }, '"data"'],
      [{ extendData: 'yes', data: {} }, '"extendData"'],
      [{ extendData: true }, '"data"'],
      [{ status: 'gone' }, '"status"'],
      [{ orderAt: 'x' }, '"orderAt"'],
      [{ scope: 5 }, '"scope"'],
      [{ pushNotification: { payload: {} } }, '"pushNotification.payload.title"'],
      [{ nope: 1 }, '"nope"'],
    ] as [unknown, string][]) {
      const res = await b.api('PUT', `${path}/${n.id}`, { json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
    expect((await b.api('PUT', `${path}/abc`, { json: {} })).status).toBe(400);
    const unknown = await apiError(b.studio.Notifications.update(999_999, { data: {} }));
    expect(unknown).toMatchObject({ status: 404, code: 'NOTIFICATION_NOT_FOUND' });
    expect((await apiError(b.studio.Notifications.remove(999_999))).status).toBe(404);
    const [stored] = await b.studio.Notifications.list({ where: { id: n.id } });
    expect(stored!.data).toEqual({ keep: true });
    expect(stored!.updatedAt).toBe(n.updatedAt);
  });

  it('soft-deletes: 200 {}, hidden by default, shown with includeDeleted, no longer updatable', async () => {
    const n = await b.studio.Notifications.create({ data: { del: 1 }, status: 'published' });
    now += 1000;
    const res = await b.api('DELETE', `${path}/${n.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(await b.studio.Notifications.list({ where: { id: n.id } })).toEqual([]);
    expect(await b.studio.Notifications.count({ where: { id: n.id } })).toBe(0);
    const [deleted] = await b.studio.Notifications.list({ where: { id: n.id }, includeDeleted: true });
    expect(deleted!.deletedAt).toBe(new Date(now).toISOString());
    expect(await b.studio.Notifications.count({ where: { id: n.id }, includeDeleted: true })).toBe(1);
    expect((await apiError(b.studio.Notifications.update(n.id, { data: {} }))).status).toBe(404);
    // deleting again changes nothing
    expect((await b.api('DELETE', `${path}/${n.id}`)).status).toBe(200);
    const [again] = await b.studio.Notifications.list({ where: { id: n.id }, includeDeleted: true });
    expect(again!.deletedAt).toBe(deleted!.deletedAt);
  });

  it('an unknown app is 404 (and so is an app the token may not act for), no token 401', async () => {
    expect((await b.api('GET', `/v1/apps/999/notifications`)).status).toBe(404);
    expect((await b.api('PUT', `/v1/apps/999/notifications`, { json: { data: {} } })).status).toBe(404);
    expect((await b.api('GET', path, { token: null })).status).toBe(401);
  });
});

describe('notifications: list parameters and visibility', () => {
  let b: TestBackend;
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  let path: string;
  const created: Notification[] = [];
  beforeAll(async () => {
    b = await startTestBackend({ clock: () => now });
    path = `/v1/apps/${b.server.bootstrap.appId}/notifications`;
    // orderAt deliberately not in creation order
    const specs = [
      { data: { k: 'a', tags: ['x'] }, status: 'published', orderAt: '2030-01-03T00:00:00Z' },
      { data: { k: 'b', nested: { deep: 1, other: 2 } }, status: 'published', orderAt: '2030-01-01T00:00:00Z', scope: { email: 'ann@example.com' } },
      { data: { k: 'c' }, status: 'draft', orderAt: '2030-01-05T00:00:00Z' },
      { data: { k: 'd' }, status: 'published', orderAt: '2030-01-02T00:00:00Z', scope: { email: { $in: ['bob@example.com', 'cy@example.com'] } } },
      { data: { k: 'e' }, status: 'scheduled', orderAt: '2030-02-01T00:00:00Z' },
      { data: { k: 'f' }, status: 'published', orderAt: '2030-01-04T00:00:00Z', scope: [{ topic: 'sports' }, { team: 'red' }] },
    ] as const;
    for (const spec of specs) {
      created.push(await b.studio.Notifications.create(spec as never));
      now += 1000;
    }
    await b.studio.Notifications.update(created[0]!.id, { data: { k: 'a', tags: ['x'], touched: true } }); // updatedAt newest
  });
  afterAll(() => b.close());
  const keys = (list: Notification[]) => list.map((n) => n.data.k);

  it('studio sees every status, ordered by orderAt DESC by default', async () => {
    const res = await b.api('GET', path, { token: b.server.bootstrap.studioToken });
    expect(res.status).toBe(200);
    expect(keys(res.body.notifications)).toEqual(['e', 'c', 'f', 'a', 'd', 'b']);
  });

  it('order by id, createdAt, updatedAt, orderAt in both directions', async () => {
    expect(keys(await b.studio.Notifications.list({ order: 'id', direction: 'ASC' }))).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(keys(await b.studio.Notifications.list({ order: 'id' }))).toEqual(['f', 'e', 'd', 'c', 'b', 'a']);
    expect(keys(await b.studio.Notifications.list({ order: 'createdAt', direction: 'asc' }))).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(keys(await b.studio.Notifications.list({ order: 'updatedAt' }))[0]).toBe('a');
    expect(keys(await b.studio.Notifications.list({ order: 'orderAt', direction: 'ASC' }))).toEqual(['b', 'd', 'a', 'f', 'c', 'e']);
    const get = await b.api('GET', `${path}?order=id&direction=ASC&limit=2`, { token: b.server.bootstrap.studioToken });
    expect(keys(get.body.notifications)).toEqual(['a', 'b']);
  });

  it('limit defaults to 100 and is bounded; offset pages', async () => {
    const many = Array.from({ length: 100 }, (_, i) => ({ data: { k: `bulk${i}` } }));
    const bulk = await b.studio.Notifications.batch(many);
    const extra = await b.studio.Notifications.batch([{ data: { k: 'bulk100' } }]);
    try {
      expect((await b.studio.Notifications.list()).length).toBe(100);
      expect(await b.studio.Notifications.count()).toBe(107);
      expect((await b.studio.Notifications.list({ limit: 1000 })).length).toBe(107);
      expect(keys(await b.studio.Notifications.list({ order: 'id', direction: 'ASC', limit: 2, offset: 1 }))).toEqual(['b', 'c']);
      for (const bad of ['0', '1001', 'x', '2.5']) {
        const res = await b.api('GET', `${path}?limit=${bad}`);
        expect(res.status).toBe(400);
        expect(res.body.error.message).toContain('"limit"');
      }
    } finally {
      for (const n of [...bulk, ...extra]) await b.studio.Notifications.remove(n.id);
    }
  });

  it('refuses bad list parameters with 400 naming them; where and scope only with POST', async () => {
    for (const [query, field] of [
      ['order=title', '"order"'],
      ['direction=UP', '"direction"'],
      ['count=maybe', '"count"'],
      ['includeDeleted=2', '"includeDeleted"'],
      ['recipientId=abc', '"recipientId"'],
      ['unread=true', '"recipientId"'],
      ['where=%7B%7D', '"where"'],
      ['scope=%7B%7D', '"scope"'],
      ['foo=1', '"foo"'],
    ]) {
      const res = await b.api('GET', `${path}?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.message, query).toContain(field);
    }
    for (const [json, field] of [
      [{ where: 'x' }, '"where"'],
      [{ where: { $where: 'true' } }, '$where'],
      [{ where: { a: { $nope: 1 } } }, '"where"'],
      [{ scope: [1] }, '"scope[0]"'],
      [{ user: 'ann' }, '"user"'],
      [{ limit: '5' }, '"limit"'],
      [{ count: 'true' }, '"count"'],
    ] as [unknown, string][]) {
      const res = await b.api('POST', path, { json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
  });

  it('count returns { count } only', async () => {
    const res = await b.api('GET', `${path}?count=true`, { token: b.server.bootstrap.studioToken });
    expect(res.body).toEqual({ count: 6 });
    const post = await b.api('POST', path, { token: b.server.bootstrap.studioToken, json: { count: true, where: { status: 'published' } } });
    expect(post.body).toEqual({ count: 4 });
  });

  it('where is a sift query with partial-document semantics', async () => {
    expect(keys(await b.studio.Notifications.list({ where: { data: { nested: { deep: 1 } } } }))).toEqual(['b']);
    expect(keys(await b.studio.Notifications.list({ where: { 'data.k': { $in: ['a', 'c'] } } }))).toEqual(['c', 'a']);
    expect(keys(await b.studio.Notifications.list({ where: { data: { tags: 'x' } } }))).toEqual(['a']);
    expect(keys(await b.studio.Notifications.list({ where: { $or: [{ data: { k: 'd' } }, { status: 'scheduled' }] } }))).toEqual(['e', 'd']);
    expect(await b.studio.Notifications.list({ where: { data: { nested: { deep: 2 } } } })).toEqual([]);
  });

  it('API tokens see only published broadcasts without an identity', async () => {
    expect(keys(await b.client.Notifications.list())).toEqual(['a']);
    const get = await b.api('GET', path);
    expect(keys(get.body.notifications)).toEqual(['a']);
  });

  it('API tokens see published notifications whose scope matches the user, including $in, plus broadcasts', async () => {
    expect(keys(await b.client.Notifications.list({ user: { email: 'ann@example.com' } }))).toEqual(['a', 'b']);
    expect(keys(await b.client.Notifications.list({ user: { email: 'cy@example.com' } }))).toEqual(['a', 'd']);
    expect(keys(await b.client.Notifications.list({ user: { email: 'zed@example.com', team: 'red' } }))).toEqual(['f', 'a']);
    expect(await b.client.Notifications.count({ user: { email: 'bob@example.com' } })).toBe(2);
  });

  it('the configured user is the default identity of the client', async () => {
    const { appId, organizationId, apiToken } = b.server.bootstrap;
    const { createClient } = await import('../../src/index.js');
    const ann = createClient({ baseUrl: b.url, appId, organizationId, authToken: apiToken, user: { email: 'ann@example.com' } });
    expect(keys(await ann.Notifications.list())).toEqual(['a', 'b']);
    expect(keys(await ann.Notifications.list({ user: null }))).toEqual(['a']);
  });

  it('scope (POST) fetches notifications for the given scope objects, plus broadcasts', async () => {
    expect(keys(await b.client.Notifications.list({ scope: { topic: 'sports' } }))).toEqual(['f', 'a']);
    expect(keys(await b.client.Notifications.list({ scope: [{ topic: 'none' }, { email: 'bob@example.com' }] }))).toEqual(['a', 'd']);
    // studio: every status, filtered the same way
    expect(keys(await b.studio.Notifications.list({ scope: { topic: 'sports' } }))).toEqual(['e', 'c', 'f', 'a']);
  });

  it('API tokens never see drafts or scheduled notifications, even with where', async () => {
    expect(await b.client.Notifications.list({ where: { status: { $in: ['draft', 'scheduled'] } } })).toEqual([]);
  });
});

describe('notifications: batch', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend();
  });
  afterAll(() => b.close());

  it('creates all and answers 201 { notifications } in order', async () => {
    const res = await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/notifications/batch`, {
      json: { notifications: [{ data: { i: 0 } }, { data: { i: 1 }, status: 'published' }] },
    });
    expect(res.status).toBe(201);
    expect(res.body.notifications.map((n: Notification) => [n.data.i, n.status])).toEqual([
      [0, 'draft'],
      [1, 'published'],
    ]);
  });

  it('is all or nothing: one bad element creates none and the error names it', async () => {
    const before = await b.studio.Notifications.count();
    const error = await apiError(b.studio.Notifications.batch([{ data: { ok: 1 } }, { data: { ok: 2 } }, { data: { ok: 3 }, scope: 7 as never }]));
    expect(error.status).toBe(400);
    expect(error.message).toContain('"notifications[2].scope"');
    const unknownSub = await apiError(
      b.studio.Notifications.batch([
        { data: { ok: 1 }, status: 'published' },
        { data: {}, pushNotification: { payload: { title: 't', body: 'b' }, subscriptions: [424242] } },
      ]),
    );
    expect(unknownSub.message).toContain('"notifications[1].pushNotification.subscriptions[0]"');
    expect(await b.studio.Notifications.count()).toBe(before);
  });

  it('refuses a missing, empty, wrongly typed or oversized batch', async () => {
    const url = `/v1/apps/${b.server.bootstrap.appId}/notifications/batch`;
    expect((await b.api('POST', url, { json: {} })).body.error.message).toContain('"notifications"');
    expect((await b.api('POST', url, { json: { notifications: {} } })).body.error.message).toContain('"notifications"');
    expect((await b.api('POST', url, { json: { notifications: [] } })).status).toBe(400);
    const big = await b.api('POST', url, { json: { notifications: Array.from({ length: 101 }, () => ({ data: {} })) } });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('BATCH_TOO_LARGE');
  });
});

describe('notifications: read receipts and unread counts', () => {
  let b: TestBackend;
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  let ids: number[];
  beforeAll(async () => {
    b = await startTestBackend({ clock: () => now });
    const list = await b.studio.Notifications.batch([
      { data: { k: 1 }, status: 'published' },
      { data: { k: 2 }, status: 'published' },
      { data: { k: 3 }, status: 'published', scope: { email: 'ann@example.com' } },
      { data: { k: 4 } },
    ]);
    ids = list.map((n) => n.id);
  });
  afterAll(() => b.close());

  it('marks as read: { marked } counts newly marked; readAt is carried for that recipient only', async () => {
    expect(await b.client.Notifications.unreadCount(RECIPIENT)).toBe(2);
    expect(await b.client.Notifications.unreadCount(RECIPIENT, { user: { email: 'ann@example.com' } })).toBe(3);
    now += 5000;
    const res = await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/notifications/mark-as-read`, {
      json: { recipientId: RECIPIENT, entries: [ids[0], ids[2], ids[0]] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ marked: 2 });
    expect(await b.client.Notifications.markAsRead(RECIPIENT, [ids[0]!, ids[1]!])).toBe(1);
    const mine = await b.client.Notifications.list({ recipientId: RECIPIENT, user: { email: 'ann@example.com' }, order: 'id', direction: 'ASC' });
    expect(mine.map((n) => n.readAt)).toEqual([new Date(now).toISOString(), new Date(now).toISOString(), new Date(now).toISOString()]);
    const theirs = await b.client.Notifications.list({ recipientId: OTHER_RECIPIENT, order: 'id', direction: 'ASC' });
    expect(theirs.map((n) => n.readAt)).toEqual([null, null]);
    expect((await b.client.Notifications.list())[0]).not.toHaveProperty('readAt');
    expect(await b.client.Notifications.unreadCount(RECIPIENT)).toBe(0);
    expect(await b.client.Notifications.unreadCount(OTHER_RECIPIENT)).toBe(2);
    const unread = await b.client.Notifications.list({ recipientId: OTHER_RECIPIENT, unread: true });
    expect(unread.map((n) => n.data.k).sort()).toEqual([1, 2]);
  });

  it('a repeated mark keeps the first read time', async () => {
    const before = (await b.client.Notifications.list({ recipientId: RECIPIENT, where: { id: ids[0] } }))[0]!.readAt;
    now += 60_000;
    expect(await b.client.Notifications.markAsRead(RECIPIENT, [ids[0]!])).toBe(0);
    expect((await b.client.Notifications.list({ recipientId: RECIPIENT, where: { id: ids[0] } }))[0]!.readAt).toBe(before);
  });

  it('validates recipientId and entries, and refuses unknown ids with 404 marking nothing', async () => {
    const url = `/v1/apps/${b.server.bootstrap.appId}/notifications/mark-as-read`;
    for (const [json, field] of [
      [{ entries: [1] }, '"recipientId"'],
      [{ recipientId: 'abc', entries: [1] }, '"recipientId"'],
      [{ recipientId: 42, entries: [1] }, '"recipientId"'],
      [{ recipientId: RECIPIENT }, '"entries"'],
      [{ recipientId: RECIPIENT, entries: 'all' }, '"entries"'],
      [{ recipientId: RECIPIENT, entries: [] }, '"entries"'],
      [{ recipientId: RECIPIENT, entries: [1, 'x'] }, '"entries[1]"'],
    ] as [unknown, string][]) {
      const res = await b.api('POST', url, { json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
    const third = '11111111-2222-4333-8444-555555555555';
    const res = await b.api('POST', url, { json: { recipientId: third, entries: [ids[1], 987654] } });
    expect(res.status).toBe(404);
    expect(res.body.error.message).toContain('987654');
    expect(await b.client.Notifications.unreadCount(third)).toBe(2);
  });
});

describe('notifications: apps are isolated', () => {
  it('a token of another app gets 404 as for a missing app; another app’s notification ids are 404 through the caller’s own app', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openSqlite } = await import('../../src/server/db/sqlite.js');
    const { createApp, createToken } = await import('../../src/server/store/identity.js');
    const dataDir = mkdtempSync(join(tmpdir(), 'iar-notif-apps-'));
    const b = await startTestBackend({ dataDir });
    try {
      const { appId, organizationId } = b.server.bootstrap;
      // a second app of the same organization, with its own API token
      const db = openSqlite({ file: join(dataDir, 'runtime.sqlite') });
      const otherApp = await createApp(db, organizationId, 'Other app', new Date().toISOString());
      const otherToken = (await createToken(db, { kind: 'api', organizationId, appId: otherApp, now: new Date().toISOString() })).token;
      await db.close();

      const mine = await b.studio.Notifications.create({ data: { secret: 1 }, status: 'published' });
      const forbidden = await b.api('GET', `/v1/apps/${appId}/notifications`, { token: otherToken });
      // Another app of the organization answers as a missing app (issue 15, no probing).
      expect(forbidden.status).toBe(404);
      expect((await b.api('PUT', `/v1/apps/${appId}/notifications/${mine.id}`, { token: otherToken, json: { data: {} } })).status).toBe(404);
      const otherPath = `/v1/apps/${otherApp}/notifications`;
      expect((await b.api('GET', otherPath, { token: otherToken })).body.notifications).toEqual([]);
      expect((await b.api('PUT', `${otherPath}/${mine.id}`, { token: otherToken, json: { data: { stolen: true } } })).status).toBe(404);
      expect((await b.api('DELETE', `${otherPath}/${mine.id}`, { token: otherToken })).status).toBe(404);
      const mark = await b.api('POST', `${otherPath}/mark-as-read`, { token: otherToken, json: { recipientId: RECIPIENT, entries: [mine.id] } });
      expect(mark.status).toBe(404);
      const [stored] = await b.studio.Notifications.list({ where: { id: mine.id }, recipientId: RECIPIENT });
      expect(stored).toMatchObject({ data: { secret: 1 }, deletedAt: null, readAt: null });
    } finally {
      await b.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
