// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import sift from 'sift';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action, ActionTrigger } from '../../src/contract/actions.js';
import { createAnalyticsApi } from '../../src/analytics/api.js';
import { createDispatcher, isDeviceAnalyticsAction } from '../../src/analytics/dispatcher.js';
import type { AnalyticsEvent } from '../../src/analytics/types.js';
import { compilePartialFilter as compileWhere, flattenWhere } from '../../src/filter/partial.js';
import { resolveConfig } from '../../src/core/config.js';
import type { ClientContext } from '../../src/core/context.js';
import { createRuntime } from '../../src/core/runtime.js';
import { withOnce } from '../../src/core/logger.js';
import { createTransport } from '../../src/http/transport.js';
import { clientStore } from '../../src/storage/client-store.js';
import { findCachedAction } from '../../src/storage/actions-cache.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const pageView = (data: Record<string, unknown>): AnalyticsEvent => ({ type: 'analytics.pageView', data, createdAt: '2030-01-01T00:00:00.000Z' });
const event = (data: Record<string, unknown>): AnalyticsEvent => ({ type: 'analytics.event', data, createdAt: '2030-01-01T00:00:00.000Z' });

let nextId = 1;
function action(triggers: ActionTrigger[], extra: Partial<Action> = {}): Action {
  const id = nextId++;
  return {
    id,
    appId: 1,
    name: `action-${id}`,
    active: true,
    published: true,
    publishedAt: null,
    lastRunAt: null,
    nextRunAt: null,
    createdAt: '2030-01-01T00:00:00.000Z',
    updatedAt: '2030-01-01T00:00:00.000Z',
    frequency: null,
    timezone: 'UTC',
    environment: 'client',
    triggers,
    functions: [],
    pageId: null,
    missedRuns: 'coalesce',
    ...extra,
  };
}
const analytics = (where?: Record<string, unknown>): ActionTrigger => ({ trigger: 'analytics', where });

function logger() {
  const lines: string[] = [];
  const log = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } };
}

describe('trigger where: partial-document matching', () => {
  it('matches a page id whatever else the data holds', () => {
    const test = compileWhere({ type: 'analytics.pageView', data: { _pageId: 77 } });
    expect(test(pageView({ _pageId: 77 }))).toBe(true);
    expect(test(pageView({ _pageId: 77, _os: 'iOS', label: 'x', nested: { a: 1 } }))).toBe(true);
    expect(test(pageView({ _pageId: 78 }))).toBe(false);
    expect(test(pageView({ _pageId: '77' }))).toBe(false);
    expect(test(pageView({}))).toBe(false);
    expect(test(event({ _pageId: 77, category: 'c', action: 'a' }))).toBe(false);
  });

  it('matches category and action, and extra data keys, nested too', () => {
    const test = compileWhere({ type: 'analytics.event', data: { category: 'form', action: 'submit', form: { id: 'signup' } } });
    expect(test(event({ category: 'form', action: 'submit', form: { id: 'signup', fields: 3 }, _pageId: 1 }))).toBe(true);
    expect(test(event({ category: 'form', action: 'submit', form: { id: 'login' } }))).toBe(false);
    expect(test(event({ category: 'form', action: 'submit' }))).toBe(false);
    expect(test(event({ category: 'form', action: 'reset', form: { id: 'signup' } }))).toBe(false);
    expect(test(event({ category: 'video', action: 'submit', form: { id: 'signup' } }))).toBe(false);
  });

  it('a type-only where matches every event of that type; no where matches all', () => {
    const test = compileWhere({ type: 'analytics.event' });
    expect(test(event({ category: 'a', action: 'b' }))).toBe(true);
    expect(test(event({}))).toBe(true);
    expect(test(pageView({ category: 'a', action: 'b' }))).toBe(false);
    expect(compileWhere(undefined)(pageView({}))).toBe(true);
    expect(compileWhere({})(event({}))).toBe(true);
  });

  it('keeps operators at their path, and compiles $or/$and members the same way', () => {
    expect(flattenWhere({ type: 'analytics.pageView', data: { _pageId: { $in: [1, 2] }, user: { plan: 'pro' } } })).toEqual({
      type: 'analytics.pageView',
      'data._pageId': { $in: [1, 2] },
      'data.user.plan': 'pro',
    });
    const test = compileWhere({ $or: [{ data: { _pageId: { $in: [1, 2] } } }, { data: { category: 'form', score: { $gte: 10 } } }] });
    expect(test(pageView({ _pageId: 2, x: 1 }))).toBe(true);
    expect(test(event({ category: 'form', action: 'a', score: 12 }))).toBe(true);
    expect(test(event({ category: 'form', action: 'a', score: 9 }))).toBe(false);
    expect(test(pageView({ _pageId: 3 }))).toBe(false);
  });

  it('gives the same answers as sift on the flattened query, arrays and nulls included', () => {
    const queries = [
      { data: { _pageId: 77 } },
      { data: { tags: 'a' } },
      { data: { items: { name: 'x' } } },
      { data: { flag: true, n: 0 } },
      { type: 'analytics.event', data: { category: 'c' } },
    ];
    const docs = [
      pageView({ _pageId: 77 }),
      pageView({ _pageId: [76, 77] }),
      pageView({ tags: ['a', 'b'] }),
      pageView({ tags: 'a' }),
      pageView({ tags: null }),
      pageView({ items: [{ name: 'y' }, { name: 'x' }] }),
      pageView({ items: { name: 'x' } }),
      pageView({ items: 'x' }),
      pageView({ flag: true, n: 0 }),
      pageView({ flag: 'true', n: '0' }),
      event({ category: 'c' }),
      event({ category: ['c'] }),
      { type: 'analytics.event', data: null } as unknown as AnalyticsEvent,
    ];
    for (const q of queries) {
      const reference = sift(flattenWhere(q));
      const fast = compileWhere(q);
      for (const doc of docs) expect(fast(doc), `${JSON.stringify(q)} on ${JSON.stringify(doc)}`).toBe(reference(doc));
    }
  });

  it('refuses malformed queries with the path of the problem', () => {
    expect(() => compileWhere({ data: { _pageId: { $in: [1], x: 2 } } }, 'triggers[0].where')).toThrow(/triggers\[0\]\.where\.data\._pageId mixes operators/);
    expect(() => compileWhere({ $where: 'true' })).toThrow(/\$where is not allowed/);
    expect(() => compileWhere({ $or: {} })).toThrow(/where\.\$or must be a non-empty array/);
    expect(() => compileWhere({ data: { n: { $bogus: 1 } } })).toThrow(/bogus/);
    expect(() => compileWhere('type')).toThrow(/must be an object/);
  });
});

describe('trigger dispatch', () => {
  it('keeps only active device actions with an analytics trigger (published ones in the live app)', () => {
    expect(isDeviceAnalyticsAction(action([analytics()]), 'live')).toBe(true);
    expect(isDeviceAnalyticsAction(action([analytics()], { environment: 'any' }), 'live')).toBe(true);
    expect(isDeviceAnalyticsAction(action([analytics()], { environment: 'server' }), 'live')).toBe(false);
    expect(isDeviceAnalyticsAction(action([analytics()], { active: false }), 'live')).toBe(false);
    expect(isDeviceAnalyticsAction(action([analytics()], { published: false }), 'live')).toBe(false);
    expect(isDeviceAnalyticsAction(action([analytics()], { published: false }), 'viewer')).toBe(true);
    expect(isDeviceAnalyticsAction(action([{ trigger: 'manual' }]), 'live')).toBe(false);
  });

  it('matches synchronously, queues the runs, runs each matching action once per event in order', async () => {
    const runs: string[] = [];
    const d = createDispatcher({
      environment: 'live',
      logger: logger().logger,
      run: async (a, ctx) => void runs.push(`${a.name}:${ctx.trigger}:${ctx.event.data._pageId ?? ctx.event.data.action}`),
    });
    const home = action([analytics({ type: 'analytics.pageView', data: { _pageId: 1 } }), analytics({ type: 'analytics.pageView', data: { label: 'home' } })], {
      name: 'home',
    });
    const every = action([analytics({ type: 'analytics.event' })], { name: 'every' });
    const submit = action([analytics({ type: 'analytics.event', data: { category: 'form', action: 'submit' } })], { name: 'submit' });
    const untyped = action([analytics({ data: { _pageId: 2 } })], { name: 'untyped' });
    d.setActions([home, every, submit, untyped, action([{ trigger: 'manual' }])]);
    expect(d.size).toBe(4);
    expect(d.dispatch(pageView({ _pageId: 1, label: 'home' }))).toBe(1);
    expect(runs).toEqual([]); // queued, not run inside dispatch
    expect(d.dispatch(event({ category: 'form', action: 'submit' }))).toBe(2);
    expect(d.dispatch(pageView({ _pageId: 2 }))).toBe(1);
    expect(d.dispatch(pageView({ _pageId: 3 }))).toBe(0);
    await d.idle();
    expect(runs).toEqual(['home:analytics:1', 'every:analytics:submit', 'submit:analytics:submit', 'untyped:analytics:2']);
  });

  it('a device trigger where with a catastrophic pattern matches at once (RE2, issue 14)', async () => {
    // On a backtracking engine `(a|a?)+$` over 40 `a`s and a `!` takes hours; the device matches it with RE2.
    const evil = `${'a'.repeat(40)}!`;
    const runs: unknown[] = [];
    const d = createDispatcher({ environment: 'live', logger: logger().logger, run: async (_a, c) => void runs.push(c.event.data.action) });
    d.setActions([
      action([analytics({ type: 'analytics.event', data: { action: { $regex: '(a|a?)+$' } } })]),
      action([analytics({ type: 'analytics.event', data: { action: { $regex: '^(a+)+$' } } })]),
    ]);
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const poll = () => (d.ready ? resolve() : setTimeout(poll, 5));
      poll();
    });
    expect(d.dispatch(event({ category: 'x', action: evil }))).toBe(1);
    await d.idle();
    expect(runs).toEqual([evil]);
    // Generous for a loaded machine: the matching itself is microseconds.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('holds events until the actions are known, then matches them', async () => {
    const runs: number[] = [];
    const d = createDispatcher({ environment: 'live', logger: logger().logger, run: async (_a, c) => void runs.push(c.event.data._pageId as number) });
    d.dispatch(pageView({ _pageId: 5 }));
    d.dispatch(pageView({ _pageId: 6 }));
    d.setActions([action([analytics({ data: { _pageId: 6 } })])]);
    await d.idle();
    expect(runs).toEqual([6]);
  });

  it("isolates failures: one action's failure stops neither the others nor later events", async () => {
    const { lines, logger: log } = logger();
    const runs: string[] = [];
    const d = createDispatcher({
      environment: 'live',
      logger: log,
      run: (a) => {
        if (a.name === 'throws') throw new Error('thrown-now');
        if (a.name === 'rejects') return Promise.reject(new Error('rejected-later'));
        runs.push(a.name);
        return Promise.resolve();
      },
    });
    const where = { type: 'analytics.pageView' };
    d.setActions([action([analytics(where)], { name: 'throws' }), action([analytics(where)], { name: 'rejects' }), action([analytics(where)], { name: 'ok' })]);
    d.dispatch(pageView({}));
    d.dispatch(pageView({}));
    await d.idle();
    expect(runs).toEqual(['ok', 'ok']);
    expect(lines.filter((l) => l.includes('thrown-now'))).toHaveLength(2);
    expect(lines.filter((l) => l.includes('rejected-later'))).toHaveLength(2);
  });

  it('skips a malformed trigger with a warning and keeps the rest', async () => {
    const { lines, logger: log } = logger();
    const runs: string[] = [];
    const d = createDispatcher({ environment: 'live', logger: log, run: async (a) => void runs.push(a.name) });
    d.setActions([action([analytics({ $where: 'x' })], { name: 'bad' }), action([analytics({ type: 'analytics.pageView' })], { name: 'good' })]);
    d.dispatch(pageView({}));
    await d.idle();
    expect(runs).toEqual(['good']);
    expect(lines.join('\n')).toMatch(/"bad".*triggers\[0\]\.where\.\$where: operator \$where is not allowed/);
  });

  it('drops runs beyond the queue limit with a warning instead of piling up', async () => {
    const { lines, logger: log } = logger();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    const d = createDispatcher({
      environment: 'live',
      logger: log,
      maxQueued: 3,
      run: async () => {
        started++;
        await gate;
      },
    });
    d.setActions([action([analytics()])]);
    for (let i = 0; i < 10; i++) d.dispatch(pageView({}));
    release();
    await d.idle();
    expect(started).toBe(3);
    expect(lines.filter((l) => l.includes('Too many'))).toHaveLength(7);
  });

  it('holds at most maxQueued events before the actions are known, and says so once', async () => {
    const { lines, logger: log } = logger();
    const runs: number[] = [];
    const d = createDispatcher({ environment: 'live', logger: log, maxQueued: 3, run: async (_a, c) => void runs.push(c.event.data.n as number) });
    for (let n = 0; n < 6; n++) d.dispatch(pageView({ n }));
    d.setActions([action([analytics()])]);
    await d.idle();
    expect(runs).toEqual([0, 1, 2]);
    expect(lines.filter((l) => l.includes('waiting for the actions list'))).toHaveLength(1);
  });
});

describe('analytics API with triggers from the cached actions', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startTestBackend();
    // These tests put the list in the local store themselves: the device is offline so that it is used as it is
    // (online, a page load first asks the backend, which holds none of these actions: actions-fresh-page-load.test.ts).
    Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => false });
  });
  afterAll(async () => {
    Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => true });
    await backend?.close();
  });

  function context(): ClientContext {
    const config = resolveConfig({ baseUrl: backend.url, appId: backend.server.bootstrap.appId, authToken: backend.server.bootstrap.apiToken });
    const http = createTransport({ baseUrl: () => config.baseUrl!, authToken: () => config.authToken });
    return { http, config: () => config, appId: () => config.appId!, now: () => Date.now(), logger: withOnce(logger().logger), runtime: createRuntime() };
  }

  it('runs the matching actions with the event in the context; tracking goes on when a run fails', async () => {
    const ctx = context();
    const store = await clientStore(ctx);
    const fires = action([analytics({ type: 'analytics.pageView', data: { _pageId: 77 } })], { name: 'fires' });
    const fails = action([analytics({ type: 'analytics.pageView' })], { name: 'fails' });
    await store.put('actions', 'live', { actions: [fails, fires], fetchedAt: new Date().toISOString() });
    const seen: { name: string; event: AnalyticsEvent }[] = [];
    const api = createAnalyticsApi(ctx, {
      run: async (a, c) => {
        if (a.name === 'fails') throw new Error('boom');
        seen.push({ name: a.name, event: c.event });
      },
    });
    const first = api.pageView({ _pageId: 77, extra: 'yes' });
    const second = api.pageView({ _pageId: 78 });
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    await api.idle();
    expect(seen).toEqual([{ name: 'fires', event: first }]);
    expect(seen[0]!.event.data).toMatchObject({ _pageId: 77, extra: 'yes', _platform: 'web' });
  });

  it('fires when the actions were loaded before the first event (e.g. by an offline run())', async () => {
    const ctx = context();
    const store = await clientStore(ctx);
    const fires = action([analytics({ type: 'analytics.pageView', data: { _pageId: 5 } })], { name: 'early' });
    await store.put('actions', 'live', { actions: [fires], fetchedAt: new Date().toISOString() });
    expect((await findCachedAction(ctx, 'early'))?.id).toBe(fires.id); // the cache is loaded now
    const seen: string[] = [];
    const api = createAnalyticsApi(ctx, { run: async (a) => void seen.push(a.name) });
    api.pageView({ _pageId: 5 });
    const settled = await Promise.race([api.idle().then(() => 'idle'), new Promise((r) => setTimeout(() => r('still waiting'), 2000))]);
    expect(settled).toBe('idle');
    expect(seen).toEqual(['early']);
  });
});
