import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isApiError, isClientError } from '../../src/index.js';
import { createRecordingPushSender, type RecordingPushSender } from '../../src/server/index.js';
import { PUSH_RETRY, retryDelayMs } from '../../src/server/notifications/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const guid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const payload = { title: 'Hi', body: 'There' };

interface Env {
  b: TestBackend;
  sender: RecordingPushSender;
  setNow(ms: number): void;
  now(): number;
  subscribe(n: number, user?: Record<string, unknown>): Promise<number>;
  deliveries(id: number): Promise<any[]>;
}

async function startEnv(dataDir?: string, start = T0): Promise<Env> {
  let now = start;
  const sender = createRecordingPushSender();
  const b = await startTestBackend({ clock: () => now, pushSender: sender, ...(dataDir ? { dataDir } : {}) });
  return {
    b,
    sender,
    setNow: (ms) => (now = ms),
    now: () => now,
    async subscribe(n, user) {
      const s = await b.client.Notifications.subscribe({ token: `token-${n}`, platform: 'web', device: `device ${n}`, uuid: guid(n), user: user ?? null });
      return s.id;
    },
    async deliveries(id) {
      const res = await b.api('GET', `/v1/apps/${b.server.bootstrap.appId}/notifications/${id}/deliveries`, { token: b.server.bootstrap.studioToken });
      expect(res.status).toBe(200);
      return res.body.deliveries;
    },
  };
}

const sentTo = (sender: RecordingPushSender) => sender.sent.map((m) => m.subscription.uuid).sort();

describe('push subscriptions', () => {
  let env: Env;
  beforeAll(async () => {
    env = await startEnv();
  });
  afterAll(() => env.b.close());

  it('registers a device (201), idempotently per token (200, same id, updated record)', async () => {
    const { b } = env;
    const path = `/v1/apps/${b.server.bootstrap.appId}/subscriptions`;
    const first = await b.api('POST', path, {
      json: { device: 'Pixel', platform: 'android', token: 'tok-A', uuid: guid(1), user: { id: 7, email: 'a@x.io' } },
    });
    expect(first.status).toBe(201);
    expect(first.body.subscription).toMatchObject({
      appId: b.server.bootstrap.appId,
      userId: 7,
      device: 'Pixel',
      platform: 'android',
      token: 'tok-A',
      uuid: guid(1),
      createdAt: new Date(T0).toISOString(),
    });
    expect(first.body.subscription.ipAddress).toMatch(/127\.0\.0\.1/);
    env.setNow(T0 + 1000);
    const again = await b.api('POST', path, { json: { device: 'Pixel 9', platform: 'android', token: 'tok-A', uuid: guid(1) } });
    expect(again.status).toBe(200);
    expect(again.body.subscription).toMatchObject({
      id: first.body.subscription.id,
      device: 'Pixel 9',
      userId: null,
      updatedAt: new Date(T0 + 1000).toISOString(),
    });
    const list = await b.studio.Notifications.subscriptions();
    expect(list.filter((s) => s.token === 'tok-A')).toHaveLength(1);
  });

  it('refuses missing or wrongly typed fields with 400 naming them', async () => {
    const { b } = env;
    const path = `/v1/apps/${b.server.bootstrap.appId}/subscriptions`;
    const ok = { device: 'd', platform: 'web', token: 't', uuid: guid(2) };
    for (const [json, field] of [
      [{ ...ok, device: undefined }, '"device"'],
      [{ ...ok, platform: 3 }, '"platform"'],
      [{ ...ok, token: '' }, '"token"'],
      [{ ...ok, uuid: undefined }, '"uuid"'],
      [{ ...ok, uuid: 'device-1' }, '"uuid"'],
      [{ ...ok, user: 'me' }, '"user"'],
    ] as [unknown, string][]) {
      const res = await b.api('POST', path, { json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
  });

  it('the subscription list is for studio users only: an API token gets 403', async () => {
    const error = await env.b.client.Notifications.subscriptions().catch((e: unknown) => e);
    expect(isApiError(error) && error.status).toBe(403);
    const raw = await env.b.api('GET', `/v1/apps/${env.b.server.bootstrap.appId}/subscriptions`);
    expect(raw.status).toBe(403);
    expect(raw.body.error.code).toBe('STUDIO_ONLY');
    expect((await env.b.studio.Notifications.subscriptions()).length).toBeGreaterThan(0);
  });

  it('subscribe() without a token outside a browser is a clear ClientError', async () => {
    const error = await env.b.client.Notifications.subscribe().catch((e: unknown) => e);
    expect(isClientError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'PUSH_UNSUPPORTED' });
  });

  it('recipientId() is a stable GUID for this device', () => {
    const id = env.b.client.Notifications.recipientId();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(env.b.client.Notifications.recipientId()).toBe(id);
  });
});

describe('push outbox', () => {
  let env: Env;
  beforeEach(async () => {
    env = await startEnv();
  });
  afterEach(() => env.b.close());

  it('publishing a broadcast with a push delivers once to every subscription of the app', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    await env.subscribe(2, { email: 'b@x.io' });
    const n = await b.studio.Notifications.create({ data: { k: 1 }, status: 'published', pushNotification: { payload } });
    await b.server.tick();
    expect(sentTo(sender)).toEqual([guid(1), guid(2)]);
    expect(sender.sent[0]!.payload).toMatchObject({ title: 'Hi', body: 'There', notificationId: n.id });
    await b.server.tick();
    expect(sender.sent).toHaveLength(2); // nothing twice
    const deliveries = await env.deliveries(n.id);
    expect(deliveries.map((d) => [d.state, d.attempts, d.sentAt])).toEqual([
      ['sent', 1, new Date(T0).toISOString()],
      ['sent', 1, new Date(T0).toISOString()],
    ]);
    expect(deliveries[0].history).toEqual([{ attempt: 1, at: new Date(T0).toISOString(), ok: true, error: null }]);
  });

  it('a draft sends nothing until it is published; a scoped push goes to the users in scope ($in)', async () => {
    const { b, sender } = env;
    await env.subscribe(1, { email: 'ann@x.io' });
    await env.subscribe(2, { email: 'bob@x.io' });
    await env.subscribe(3, { email: 'cy@x.io' });
    await env.subscribe(4); // no user: not in any scope
    const n = await b.studio.Notifications.create({ data: {}, scope: { email: { $in: ['ann@x.io', 'cy@x.io'] } }, pushNotification: { payload } });
    await b.server.tick();
    expect(sender.sent).toHaveLength(0);
    await b.studio.Notifications.update(n.id, { status: 'published' });
    await b.server.tick();
    expect(sentTo(sender)).toEqual([guid(1), guid(3)]);
  });

  it('listed subscriptions are the only targets', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    const second = await env.subscribe(2);
    await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload, subscriptions: [second] } });
    await b.server.tick();
    expect(sentTo(sender)).toEqual([guid(2)]);
  });

  it('waits for delayUntilTimestamp', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    const at = T0 / 1000 + 600;
    const n = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload, delayUntilTimestamp: at } });
    await b.server.tick();
    env.setNow(at * 1000 - 1);
    await b.server.tick();
    expect(sender.sent).toHaveLength(0);
    expect((await env.deliveries(n.id))[0]).toMatchObject({ state: 'pending', nextAttemptAt: new Date(at * 1000).toISOString() });
    env.setNow(at * 1000);
    await b.server.tick();
    expect(sentTo(sender)).toEqual([guid(1)]);
  });

  it('unpublishing or deleting before a delayed send cancels it', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    const push = { payload, delayUntilTimestamp: T0 / 1000 + 60 };
    const a = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: push });
    const c = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: push });
    await b.studio.Notifications.update(a.id, { status: 'draft' });
    await b.studio.Notifications.remove(c.id);
    env.setNow(T0 + 120_000);
    await b.server.tick();
    expect(sender.sent).toHaveLength(0);
    expect((await env.deliveries(a.id)).map((d) => d.state)).toEqual(['cancelled']);
    expect((await env.deliveries(c.id)).map((d) => d.state)).toEqual(['cancelled']);
  });

  it('removing or replacing the push of a published notification cancels its delayed send', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    const later = (title: string) => ({ payload: { title, body: '' }, delayUntilTimestamp: T0 / 1000 + 60 });
    const removed = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: later('removed') });
    const replaced = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: later('old') });
    await b.studio.Notifications.update(removed.id, { pushNotification: null });
    await b.studio.Notifications.update(replaced.id, { pushNotification: later('new') });
    env.setNow(T0 + 120_000);
    await b.server.tick();
    expect(sender.sent.map((m) => m.payload.title)).toEqual(['new']);
    expect((await env.deliveries(removed.id)).map((d) => d.state)).toEqual(['cancelled']);
    expect((await env.deliveries(replaced.id)).map((d) => d.state).sort()).toEqual(['cancelled', 'sent']);
  });

  it('a delayUntilTimestamp past year 9999 is a 400; a notification that cannot be published stops no other push', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    const appId = b.server.bootstrap.appId;
    const studio = { token: b.server.bootstrap.studioToken };
    const huge = { payload, delayUntilTimestamp: 1e13 };
    for (const [method, path, json] of [
      ['PUT', `/v1/apps/${appId}/notifications`, { data: {}, status: 'published', pushNotification: huge }],
      ['PUT', `/v1/apps/${appId}/notifications`, { data: {}, status: 'scheduled', orderAt: T0 / 1000 + 10, pushNotification: huge }],
    ] as const) {
      const res = await b.api(method, path, { ...studio, json });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_FIELD', field: 'pushNotification.delayUntilTimestamp' });
    }
    const draft = await b.studio.Notifications.create({ data: {} });
    const moved = await b.api('PUT', `/v1/apps/${appId}/notifications/${draft.id}`, { ...studio, json: { status: 'published', pushNotification: huge } });
    expect(moved.status).toBe(400);
    expect((await b.studio.Notifications.list({ includeDeleted: true })).find((n) => n.id === draft.id)).toMatchObject({ status: 'draft' });
    const ok = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload } });
    await b.server.tick();
    expect(sender.sent.map((m) => m.notificationId)).toEqual([ok.id]);
  });

  it('the automatic badge is each recipient’s unread count at sending time; a fixed badge wins', async () => {
    const { b, sender } = env;
    await env.subscribe(1, { email: 'ann@x.io' });
    await env.subscribe(2, { email: 'bob@x.io' });
    const old = await b.studio.Notifications.batch([
      { data: { k: 'old1' }, status: 'published' },
      { data: { k: 'old2' }, status: 'published', scope: { email: 'ann@x.io' } },
      { data: { k: 'draft' } },
    ]);
    await b.client.Notifications.markAsRead(guid(2), [old[0]!.id]);
    await b.studio.Notifications.create({ data: { k: 'new' }, status: 'published', pushNotification: { payload } });
    await b.server.tick();
    const badges = Object.fromEntries(sender.sent.map((m) => [m.subscription.uuid, m.payload.badge]));
    // ann: old1, old2 (scoped to her), new = 3 unread; bob read old1, cannot see old2: new = 1
    expect(badges).toEqual({ [guid(1)]: 3, [guid(2)]: 1 });
    await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload: { ...payload, badge: 42 } } });
    await b.server.tick();
    expect(sender.sent.slice(2).map((m) => m.payload.badge)).toEqual([42, 42]);
  });

  it('retries a failing delivery with backoff, records each attempt, and sends it once it works', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    sender.failNext(2, { message: 'push service unavailable' });
    const n = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload } });
    await b.server.tick();
    let [d] = await env.deliveries(n.id);
    expect(d).toMatchObject({ state: 'pending', attempts: 1, lastError: 'push service unavailable' });
    expect(d.nextAttemptAt).toBe(new Date(T0 + retryDelayMs(1)).toISOString());
    env.setNow(T0 + retryDelayMs(1) - 1);
    await b.server.tick();
    expect(sender.calls).toHaveLength(1); // not before the backoff
    env.setNow(T0 + retryDelayMs(1));
    await b.server.tick();
    [d] = await env.deliveries(n.id);
    expect(d).toMatchObject({ state: 'pending', attempts: 2 });
    expect(d.nextAttemptAt).toBe(new Date(T0 + retryDelayMs(1) + retryDelayMs(2)).toISOString());
    expect(retryDelayMs(2)).toBe(2 * retryDelayMs(1));
    env.setNow(T0 + retryDelayMs(1) + retryDelayMs(2));
    await b.server.tick();
    [d] = await env.deliveries(n.id);
    expect(d).toMatchObject({ state: 'sent', attempts: 3, lastError: null });
    expect(d.history.map((h: { ok: boolean; error: string | null }) => [h.ok, h.error])).toEqual([
      [false, 'push service unavailable'],
      [false, 'push service unavailable'],
      [true, null],
    ]);
    expect(sender.sent).toHaveLength(1);
  });

  it('gives up after the last attempt, and at once on a permanent error', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    sender.failNext(PUSH_RETRY.maxAttempts);
    const n = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload } });
    for (let i = 0; i < PUSH_RETRY.maxAttempts + 2; i++) {
      await b.server.tick();
      env.setNow(env.now() + PUSH_RETRY.maxDelayMs);
    }
    expect((await env.deliveries(n.id))[0]).toMatchObject({ state: 'failed', attempts: PUSH_RETRY.maxAttempts });
    expect(sender.calls).toHaveLength(PUSH_RETRY.maxAttempts);
    sender.failNext(1, { permanent: true, message: 'gone' });
    const m = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload } });
    await b.server.tick();
    env.setNow(env.now() + PUSH_RETRY.maxDelayMs);
    await b.server.tick();
    expect((await env.deliveries(m.id))[0]).toMatchObject({ state: 'failed', attempts: 1, lastError: 'gone' });
  });

  it('a published notification updated with a new pushNotification sends it again; other updates do not', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    const n = await b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload } });
    await b.server.tick();
    await b.studio.Notifications.update(n.id, { data: { edited: true } });
    await b.server.tick();
    expect(sender.sent).toHaveLength(1);
    await b.studio.Notifications.update(n.id, { pushNotification: { payload: { title: 'Again', body: '!' } } });
    await b.server.tick();
    expect(sender.sent.map((m) => m.payload.title)).toEqual(['Hi', 'Again']);
  });
});

describe('scheduled publishing (fake clock)', () => {
  let env: Env;
  beforeAll(async () => {
    env = await startEnv();
  });
  afterAll(() => env.b.close());

  it('publishes at orderAt and sends the push then, not before', async () => {
    const { b, sender } = env;
    await env.subscribe(1);
    const at = T0 + 3_600_000;
    const n = await b.studio.Notifications.create({
      data: { k: 'later' },
      status: 'scheduled',
      orderAt: new Date(at).toISOString(),
      pushNotification: { payload },
    });
    expect(n.status).toBe('scheduled');
    env.setNow(at - 1);
    await b.server.tick();
    expect(await b.client.Notifications.list()).toEqual([]);
    expect(sender.sent).toHaveLength(0);
    env.setNow(at);
    await b.server.tick();
    const [visible] = await b.client.Notifications.list();
    expect(visible).toMatchObject({ id: n.id, status: 'published', publishedAt: new Date(at).toISOString(), orderAt: new Date(at).toISOString() });
    expect(sentTo(sender)).toEqual([guid(1)]);
    await b.server.tick();
    expect(sender.sent).toHaveLength(1);
  });

  it('rescheduling moves the publication; moving back to draft cancels it', async () => {
    const { b } = env;
    const start = env.now();
    const a = await b.studio.Notifications.create({ data: { k: 'a' }, status: 'scheduled', orderAt: (start + 60_000) / 1000 });
    const c = await b.studio.Notifications.create({ data: { k: 'c' }, status: 'scheduled', orderAt: (start + 60_000) / 1000 });
    await b.studio.Notifications.update(a.id, { orderAt: (start + 120_000) / 1000 });
    await b.studio.Notifications.update(c.id, { status: 'draft' });
    env.setNow(start + 60_000);
    await b.server.tick();
    const status = async (id: number) => (await b.studio.Notifications.list({ where: { id } }))[0]!.status;
    expect(await status(a.id)).toBe('scheduled');
    expect(await status(c.id)).toBe('draft');
    env.setNow(start + 120_000);
    await b.server.tick();
    expect(await status(a.id)).toBe('published');
    expect(await status(c.id)).toBe('draft');
  });
});

describe('restart', () => {
  it('a restart in the middle of a delivery loses nothing and sends nothing twice', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'iar-push-'));
    try {
      const first = await startEnv(dataDir);
      for (let i = 1; i <= 7; i++) await first.subscribe(i);
      const publicKey = (await first.b.api('GET', `/v1/apps/${first.b.server.bootstrap.appId}/subscriptions/public-key`)).body.publicKey;
      expect(publicKey).toMatch(/^[A-Za-z0-9_-]{80,}$/);
      first.sender.hold();
      const n = await first.b.studio.Notifications.create({ data: {}, status: 'published', pushNotification: { payload } });
      const ticking = first.b.server.tick();
      await first.sender.started(PUSH_RETRY.concurrency); // deliveries in flight, held by the push service
      const closing = first.b.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      first.sender.release();
      await closing;
      await ticking;
      const sentByFirst = sentTo(first.sender);
      expect(sentByFirst.length).toBe(PUSH_RETRY.concurrency); // in-flight ones finished and were recorded; no new claims

      const second = await startEnv(dataDir, first.now());
      try {
        expect((await second.b.api('GET', `/v1/apps/${second.b.server.bootstrap.appId}/subscriptions/public-key`)).body.publicKey).toBe(publicKey);
        await second.b.server.tick();
        await second.b.server.tick();
        const all = [...sentByFirst, ...sentTo(second.sender)].sort();
        expect(all).toEqual([1, 2, 3, 4, 5, 6, 7].map(guid));
        expect((await second.deliveries(n.id)).map((d) => d.state)).toEqual(Array(7).fill('sent'));
      } finally {
        await second.b.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('scheduled notifications and pending deliveries survive a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'iar-push-'));
    try {
      const first = await startEnv(dataDir);
      await first.subscribe(1);
      await first.b.studio.Notifications.create({ data: {}, status: 'scheduled', orderAt: T0 / 1000 + 60, pushNotification: { payload } });
      await first.b.studio.Notifications.create({
        data: {},
        status: 'published',
        pushNotification: { payload: { title: 'delayed', body: '' }, delayUntilTimestamp: T0 / 1000 + 60 },
      });
      await first.b.server.tick();
      await first.b.close();
      expect(first.sender.sent).toHaveLength(0);
      const second = await startEnv(dataDir, T0 + 60_000);
      try {
        await second.b.server.tick();
        expect(second.sender.sent.map((m) => m.payload.title).sort()).toEqual(['Hi', 'delayed']);
      } finally {
        await second.b.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
