import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

describe('POST/GET v1/apps/:appId/analytics', () => {
  let backend: TestBackend;
  let appId: number;
  const path = () => `/v1/apps/${appId}/analytics`;

  beforeAll(async () => {
    backend = await startTestBackend({ clock: () => Date.parse('2030-01-02T03:04:05.000Z') });
    appId = backend.server.bootstrap.appId;
  });
  afterAll(() => backend?.close());

  it('stores a batch as log records, keeping the device time of each event', async () => {
    const res = await backend.api('POST', path(), {
      json: {
        batchId: 'b-1',
        events: [
          { type: 'analytics.pageView', data: { _pageId: 7, label: 'Home' }, createdAt: '2030-01-01T00:00:00.000Z' },
          { type: 'analytics.event', data: { category: 'form', action: 'submit' } },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 2, duplicate: false });
    const list = await backend.api('GET', path());
    expect(list.status).toBe(200);
    expect(list.body.pagination).toEqual({ total: 2, limit: 100, offset: 0 });
    expect(list.body.events.map((e: any) => [e.type, e.data, e.createdAt])).toEqual([
      ['analytics.event', { category: 'form', action: 'submit' }, '2030-01-02T03:04:05.000Z'],
      ['analytics.pageView', { _pageId: 7, label: 'Home' }, '2030-01-01T00:00:00.000Z'],
    ]);
    const views = await backend.api('GET', path() + '?type=pageView&limit=1');
    expect(views.body.events).toHaveLength(1);
    expect(views.body.events[0].type).toBe('analytics.pageView');
  });

  it('stores a re-sent batch once', async () => {
    const json = { batchId: 'b-dup', events: [{ type: 'analytics.event', data: { category: 'c', action: 'a', n: 1 } }] };
    expect((await backend.api('POST', path(), { json })).body).toEqual({ accepted: 1, duplicate: false });
    expect((await backend.api('POST', path(), { json })).body).toEqual({ accepted: 0, duplicate: true });
    // The Idempotency-Key header works the same when the body has no batchId.
    const keyed = { events: [{ type: 'analytics.event', data: { category: 'c', action: 'a', n: 2 } }] };
    const headers = { 'Idempotency-Key': 'k-1' };
    expect((await backend.api('POST', path(), { json: keyed, headers })).body.duplicate).toBe(false);
    expect((await backend.api('POST', path(), { json: keyed, headers })).body.duplicate).toBe(true);
    const list = await backend.api('GET', path() + '?type=event&limit=1000');
    expect(list.body.events.filter((e: any) => e.data.n === 1)).toHaveLength(1);
    expect(list.body.events.filter((e: any) => e.data.n === 2)).toHaveLength(1);
  });

  it('remembers batch ids for analyticsBatchIdDays, then forgets them; batches without an id are stored as they come', async () => {
    let now = Date.parse('2030-03-01T00:00:00.000Z');
    const day = 86_400_000;
    const b = await startTestBackend({ clock: () => now, limits: { analyticsBatchIdDays: 10 } });
    try {
      const url = `/v1/apps/${b.server.bootstrap.appId}/analytics`;
      const send = async (batchId: string | undefined) =>
        (await b.api('POST', url, { json: { batchId, events: [{ type: 'analytics.event', data: { category: 'c', action: batchId ?? 'none' } }] } })).body;
      expect(await send('early')).toEqual({ accepted: 1, duplicate: false });
      now += 6 * day;
      expect(await send('late')).toEqual({ accepted: 1, duplicate: false });
      now += 5 * day; // 'early' is 11 days old, 'late' 5
      await b.server.tick();
      expect(await send('late')).toEqual({ accepted: 0, duplicate: true });
      expect(await send('early')).toEqual({ accepted: 1, duplicate: false });
      expect(await send(undefined)).toEqual({ accepted: 1, duplicate: false });
      expect(await send(undefined)).toEqual({ accepted: 1, duplicate: false });
      const actions = (await b.api('GET', `${url}?type=event`)).body.events.map((e: any) => e.data.action).sort();
      expect(actions).toEqual(['early', 'early', 'late', 'none', 'none']);
    } finally {
      await b.close();
    }
  });

  it('refuses malformed batches naming the field, and stores nothing of them', async () => {
    const before = (await backend.api('GET', path())).body.pagination.total;
    const cases: [unknown, number, string][] = [
      [{}, 400, 'events'],
      [{ events: [] }, 400, 'events'],
      [{ events: [{ type: 'analytics.click', data: {} }] }, 400, 'events[0].type'],
      [
        {
          events: [
            { type: 'analytics.pageView', data: {} },
            { type: 'analytics.event', data: [] },
          ],
        },
        400,
        'events[1].data',
      ],
      [{ events: [{ type: 'analytics.event', data: { category: 'x' } }] }, 400, 'events[0].data.action'],
      [{ events: [{ type: 'analytics.pageView', createdAt: 'yesterday' }] }, 400, 'events[0].createdAt'],
      [{ batchId: 5, events: [{ type: 'analytics.pageView' }] }, 400, 'batchId'],
    ];
    for (const [json, status, field] of cases) {
      const res = await backend.api('POST', path(), { json });
      expect(res.status, JSON.stringify(json)).toBe(status);
      expect(res.body.error.message).toContain(`"${field}"`);
    }
    const big = await backend.api('POST', path(), { json: { events: [{ type: 'analytics.pageView', data: { x: 'y'.repeat(20_000) } }] } });
    expect(big.status).toBe(413);
    const tooMany = await backend.api('POST', path(), { json: { events: Array.from({ length: 1001 }, () => ({ type: 'analytics.pageView' })) } });
    expect(tooMany.status).toBe(413);
    expect((await backend.api('POST', path(), { body: '{oops', headers: { 'Content-Type': 'application/json' } })).status).toBe(400);
    expect((await backend.api('GET', path() + '?type=click')).status).toBe(400);
    expect((await backend.api('GET', path() + '?limit=-1')).status).toBe(400);
    expect((await backend.api('GET', path())).body.pagination.total).toBe(before);
  });

  it('needs a token of the app', async () => {
    const json = { events: [{ type: 'analytics.pageView' }] };
    expect((await backend.api('POST', path(), { json, token: null })).status).toBe(401);
    expect((await backend.api('POST', path(), { json, token: 'nope' })).status).toBe(401);
    expect((await backend.api('POST', `/v1/apps/${appId + 100}/analytics`, { json })).status).toBe(404);
  });
});
