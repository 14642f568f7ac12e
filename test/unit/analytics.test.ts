// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient, isClientError, type Client } from '../../src/index.js';
import { detectOs, detectPlatform } from '../../src/analytics/fields.js';
import { SESSION_IDLE_MS } from '../../src/analytics/session.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const T0 = Date.parse('2031-05-06T07:08:09.000Z');
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function thrown(fn: () => unknown): { code?: string; message?: string; client: boolean } {
  try {
    fn();
  } catch (error) {
    return { code: (error as { code?: string }).code, message: (error as Error).message, client: isClientError(error) };
  }
  return { client: false };
}

describe('Client.App.Analytics', () => {
  let backend: TestBackend;
  let now = T0;
  let appId: number;
  const make = (extra: Parameters<typeof createClient>[0] = {}): Client =>
    createClient({
      baseUrl: backend.url,
      appId,
      authToken: backend.server.bootstrap.apiToken,
      clock: () => now,
      logger: quiet,
      ...extra,
    });

  beforeAll(async () => {
    backend = await startTestBackend();
    appId = backend.server.bootstrap.appId;
  });
  afterAll(() => backend?.close());
  beforeEach(() => {
    now = T0;
    localStorage.clear();
    document.title = '';
  });

  it('adds the automatic fields, and the caller values override them', () => {
    document.title = 'Checkout';
    const client = make({ pageId: 77, user: { id: 3, email: 'ann@example.com' } });
    const event = client.App.Analytics.pageView()!;
    expect(event.type).toBe('analytics.pageView');
    expect(event.createdAt).toBe('2031-05-06T07:08:09.000Z');
    expect(event.data).toEqual({
      _platform: 'web',
      _os: detectOs(),
      _analyticsSessionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      _pageId: 77,
      _pageTitle: 'Checkout',
      _userEmail: 'ann@example.com',
    });
    const overridden = client.App.Analytics.event({ category: 'c', action: 'a', _pageId: 5, _platform: 'native', _userEmail: 'x@y.z', _pageTitle: 'T' })!;
    expect(overridden.data).toMatchObject({ _pageId: 5, _platform: 'native', _userEmail: 'x@y.z', _pageTitle: 'T', category: 'c', action: 'a' });
    expect(overridden.data._analyticsSessionId).toBe(event.data._analyticsSessionId);
  });

  it('leaves out page and user fields that are not known', () => {
    const event = make({ user: { id: 1 } }).App.Analytics.pageView()!;
    expect(Object.keys(event.data).sort()).toEqual(['_analyticsSessionId', '_os', '_platform']);
  });

  it('detects the platform and the operating system', () => {
    expect(detectPlatform({})).toBe('web');
    expect(detectPlatform({ ReactNativeWebView: {} })).toBe('native');
    expect(detectPlatform({ Capacitor: { isNativePlatform: () => true } })).toBe('native');
    expect(detectPlatform({ Capacitor: { isNativePlatform: () => false } })).toBe('web');
    expect(detectOs({ userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)' })).toBe('iOS');
    expect(detectOs({ userAgent: 'Mozilla/5.0 (Linux; Android 14; Pixel 8)' })).toBe('Android');
    expect(detectOs({ userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64)' })).toBe('Windows');
    expect(detectOs({ userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0)' })).toBe('macOS');
    expect(detectOs({ userAgent: 'Mozilla/5.0 (X11; Linux x86_64)' })).toBe('Linux');
    expect(detectOs({ userAgent: 'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0)' })).toBe('ChromeOS');
  });

  it('starts a new session after 30 idle minutes and on Session.reset(), and keeps it across page loads', () => {
    const analytics = make().App.Analytics;
    expect(analytics.Session.id()).toBeUndefined();
    const s1 = analytics.pageView()!.data._analyticsSessionId;
    now += SESSION_IDLE_MS - 1;
    expect(analytics.event({ category: 'c', action: 'a' })!.data._analyticsSessionId).toBe(s1);
    now += SESSION_IDLE_MS - 1; // idle time counts from the last event, not from the session start
    expect(analytics.pageView()!.data._analyticsSessionId).toBe(s1);
    now += SESSION_IDLE_MS;
    const s2 = analytics.pageView()!.data._analyticsSessionId;
    expect(s2).not.toBe(s1);
    // A reload of the page (a new client of the same app) continues the session.
    now += 1000;
    const reloaded = make().App.Analytics;
    expect(reloaded.pageView()!.data._analyticsSessionId).toBe(s2);
    const s3 = reloaded.Session.reset();
    expect(s3).not.toBe(s2);
    expect(reloaded.Session.id()).toBe(s3);
    expect(reloaded.pageView()!.data._analyticsSessionId).toBe(s3);
    // A clock that goes back does not end the session.
    now -= 10 * SESSION_IDLE_MS;
    expect(reloaded.pageView()!.data._analyticsSessionId).toBe(s3);
  });

  it('records the shapes of track, pageView and event', () => {
    const analytics = make({ pageId: 9 }).App.Analytics;
    const byLabel = analytics.pageView('Home')!;
    expect(byLabel).toEqual({
      type: 'analytics.pageView',
      data: expect.objectContaining({ label: 'Home', _pageId: 9 }),
      createdAt: '2031-05-06T07:08:09.000Z',
    });
    expect(analytics.pageView({ section: 'top' })!.data).toMatchObject({ section: 'top', _pageId: 9 });
    expect(analytics.track('pageView', 'Cart')!.data.label).toBe('Cart');
    const event = analytics.track('event', { category: 'video', action: 'play', label: 'intro', value: 3, extra: { nested: [1, 2] } })!;
    expect(event.type).toBe('analytics.event');
    expect(event.data).toMatchObject({ category: 'video', action: 'play', label: 'intro', value: 3, extra: { nested: [1, 2] } });
    // The recorded event is a copy: changing the caller's object afterwards changes nothing.
    const data = { category: 'c', action: 'a', list: [1] };
    const copy = analytics.event(data)!;
    data.list.push(2);
    expect(copy.data.list).toEqual([1]);
  });

  it('refuses anything but event and pageView, and malformed data, with a ClientError', () => {
    const analytics = make().App.Analytics;
    for (const type of ['click', 'analytics.pageView', '', undefined, 3]) {
      const error = thrown(() => analytics.track(type as never, {}));
      expect(error, String(type)).toMatchObject({ client: true, code: 'INVALID_ANALYTICS_TYPE' });
      expect(error.message).toContain("'event' or 'pageView'");
    }
    expect(thrown(() => analytics.event({ category: 'form' } as never))).toMatchObject({
      client: true,
      code: 'INVALID_ANALYTICS_DATA',
      message: expect.stringContaining('data.action'),
    });
    expect(thrown(() => analytics.event({ category: '', action: 'x' }))).toMatchObject({ code: 'INVALID_ANALYTICS_DATA' });
    expect(thrown(() => analytics.event('submit' as never))).toMatchObject({ code: 'INVALID_ANALYTICS_DATA' });
    expect(thrown(() => analytics.pageView(42 as never))).toMatchObject({ code: 'INVALID_ANALYTICS_DATA' });
    const circular: Record<string, unknown> = { category: 'c', action: 'a' };
    circular.self = circular;
    expect(thrown(() => analytics.event(circular as never))).toMatchObject({ code: 'INVALID_ANALYTICS_DATA' });
    expect(thrown(() => analytics.pageView({ big: 'x'.repeat(20_000) }))).toMatchObject({ code: 'ANALYTICS_EVENT_TOO_LARGE' });
    expect(thrown(() => createClient({ logger: quiet }).App.Analytics.pageView())).toMatchObject({ code: 'NOT_CONFIGURED' });
  });

  it('disableTracking() stops recording on this device until enableTracking()', async () => {
    const analytics = make().App.Analytics;
    expect(analytics.isTrackingEnabled()).toBe(true);
    analytics.disableTracking();
    expect(analytics.isTrackingEnabled()).toBe(false);
    expect(analytics.pageView()).toBeNull();
    expect(make().App.Analytics.isTrackingEnabled()).toBe(false); // remembered across page loads
    analytics.enableTracking();
    expect(analytics.pageView()).not.toBeNull();
  });

  it('disableTracking() holds where localStorage refuses writes (quota full, private mode)', () => {
    const setItem = Storage.prototype.setItem;
    Storage.prototype.setItem = () => {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    };
    try {
      const analytics = make().App.Analytics;
      analytics.disableTracking();
      expect(analytics.isTrackingEnabled()).toBe(false);
      expect(analytics.pageView()).toBeNull();
      analytics.enableTracking();
      expect(analytics.isTrackingEnabled()).toBe(true);
    } finally {
      Storage.prototype.setItem = setItem;
    }
  });

  it('delivers events to the backend in batches', async () => {
    const analytics = make({ pageId: 31 }).App.Analytics;
    const marker = `m-${Math.random()}`;
    analytics.pageView({ marker });
    analytics.event({ category: 'form', action: 'submit', marker });
    await analytics.flush();
    const { body } = await backend.api('GET', `/v1/apps/${appId}/analytics?limit=1000`);
    const mine = body.events.filter((e: { data: { marker?: string } }) => e.data.marker === marker);
    expect(mine.map((e: { type: string }) => e.type).sort()).toEqual(['analytics.event', 'analytics.pageView']);
    expect(mine[0].data._pageId).toBe(31);
    expect(mine[0].createdAt).toBe('2031-05-06T07:08:09.000Z');
  });
});
