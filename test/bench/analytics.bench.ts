import sift from 'sift';
import { expect, it } from 'vitest';
import type { Action, ActionTrigger } from '../../src/contract/actions.js';
import { createAnalyticsApi } from '../../src/analytics/api.js';
import { createDispatcher } from '../../src/analytics/dispatcher.js';
import { deviceRunner } from '../../src/analytics/runner.js';
import type { AnalyticsEvent } from '../../src/analytics/types.js';
import { flattenWhere } from '../../src/filter/partial.js';
import { resolveConfig } from '../../src/core/config.js';
import type { ClientContext } from '../../src/core/context.js';
import { createRuntime } from '../../src/core/runtime.js';
import { withOnce } from '../../src/core/logger.js';
import { createTransport } from '../../src/http/transport.js';
import { clientStore } from '../../src/storage/client-store.js';
import { startTestBackend } from '../helpers/server.js';

const quiet = withOnce({ debug() {}, info() {}, warn() {}, error() {} });

function action(id: number, where: Record<string, unknown>, functions: Action['functions'] = []): Action {
  return {
    id,
    appId: 1,
    name: `a${id}`,
    active: true,
    published: true,
    publishedAt: null,
    lastRunAt: null,
    nextRunAt: null,
    createdAt: '',
    updatedAt: '',
    frequency: null,
    timezone: 'UTC',
    environment: 'client',
    triggers: [{ trigger: 'analytics', where } as ActionTrigger],
    functions,
    pageId: null,
    missedRuns: 'coalesce',
  };
}

/** 1,000 actions: page views by page id, events by category/action, operator queries, type-less queries. */
function registered(): Action[] {
  const list: Action[] = [];
  for (let i = 0; i < 500; i++) list.push(action(list.length + 1, { type: 'analytics.pageView', data: { _pageId: i } }));
  for (let i = 0; i < 300; i++) list.push(action(list.length + 1, { type: 'analytics.event', data: { category: `c${i % 30}`, action: `a${i}` } }));
  for (let i = 0; i < 100; i++) list.push(action(list.length + 1, { type: 'analytics.pageView', data: { _pageId: { $in: [i, i + 1000] }, _os: 'iOS' } }));
  for (let i = 0; i < 100; i++) list.push(action(list.length + 1, { data: { label: `l${i}` } }));
  return list;
}

function events(n: number): AnalyticsEvent[] {
  const out: AnalyticsEvent[] = [];
  for (let i = 0; i < n; i++) {
    const base = { _platform: 'web' as const, _os: i % 2 ? 'iOS' : 'Android', _analyticsSessionId: 's', _pageTitle: 'Title', _userEmail: 'u@example.com' };
    out.push(
      i % 2
        ? { type: 'analytics.pageView', data: { ...base, _pageId: i % 700, label: `l${i % 150}` }, createdAt: '' }
        : { type: 'analytics.event', data: { ...base, _pageId: 3, category: `c${i % 40}`, action: `a${i % 400}` }, createdAt: '' },
    );
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

it('analytics trigger dispatch and page-view-to-run latency', async () => {
  const actions = registered();
  const sample = events(2000);

  // Dispatcher: compiled once, indexed by type, equality fast path (matching only: no run is queued).
  const dispatcher = createDispatcher({ environment: 'live', logger: quiet, run: async () => {} });
  dispatcher.setActions(actions);
  expect(dispatcher.size).toBe(1000);
  // Baseline in the same run: one sift tester per trigger on the flattened query, every trigger tested.
  const naive = actions.map((a) => ({ a, test: sift(flattenWhere(a.triggers[0]!.where!)) as (e: unknown) => boolean }));
  const naiveMatch = (e: AnalyticsEvent) => naive.filter((n) => n.test(e)).map((n) => n.a);

  let checksum = 0;
  for (const e of sample) {
    const fast = dispatcher
      .match(e)
      .map((a) => a.id)
      .sort((x, y) => x - y);
    const slow = naiveMatch(e)
      .map((a) => a.id)
      .sort((x, y) => x - y);
    expect(fast).toEqual(slow); // same answers
    checksum += fast.length;
  }
  expect(checksum).toBeGreaterThan(0);
  const time = (fn: (e: AnalyticsEvent) => unknown) => {
    const rounds: number[] = [];
    for (let r = 0; r < 15; r++) {
      const t0 = performance.now();
      for (const e of sample) fn(e);
      rounds.push((performance.now() - t0) / sample.length);
    }
    return median(rounds);
  };
  const dispatchMs = time((e) => dispatcher.match(e));
  const naiveMs = time(naiveMatch);

  // Page view → start of the matching client action (real device runner, engine inline in Node, warm sandbox).
  const backend = await startTestBackend();
  const config = resolveConfig({ baseUrl: backend.url, appId: backend.server.bootstrap.appId, authToken: backend.server.bootstrap.apiToken });
  // The 1,000 actions are put in the local store below, not on the backend: the page load's revalidation of the
  // list (GET tasks) fails as offline, so the stored list is used.
  const deviceFetch: typeof fetch = (input, init) =>
    /\/tasks\?/.test(input instanceof Request ? input.url : String(input)) ? Promise.reject(new TypeError('Failed to fetch')) : fetch(input, init);
  const http = createTransport({ baseUrl: () => config.baseUrl!, authToken: () => config.authToken, fetch: deviceFetch });
  const ctx: ClientContext = { http, config: () => config, appId: () => config.appId!, now: () => Date.now(), logger: quiet, runtime: createRuntime() };
  const store = await clientStore(ctx);
  const target = action(5000, { type: 'analytics.pageView', data: { _pageId: 9999 } }, [
    { functionPackage: 'com.client.function.set', settings: { seen: '{{ event.data._pageId }}' } },
  ]);
  await store.put('actions', 'live', { actions: [...actions, target], fetchedAt: new Date().toISOString() });
  const real = deviceRunner(ctx);
  let clicked = 0;
  const started: number[] = [];
  const ended: number[] = [];
  const api = createAnalyticsApi(ctx, {
    run: async (a, c) => {
      started.push(performance.now() - clicked);
      await real(a, c);
      ended.push(performance.now() - clicked);
    },
  });
  for (let i = 0; i < 25; i++) {
    clicked = performance.now();
    api.pageView({ _pageId: 9999 });
    await api.idle();
  }
  const warm = (xs: number[]) => median(xs.slice(5)); // the first runs warm the sandbox up
  await backend.close();

  const rows = [
    {
      case: 'dispatch, 1,000 analytics actions (match only)',
      'ms/event': +dispatchMs.toFixed(4),
      baseline: 'sift per trigger, all tested',
      'baseline ms/event': +naiveMs.toFixed(4),
      ratio: +(dispatchMs / naiveMs).toFixed(3),
    },
    { case: 'page view → matching action starts (warm)', 'ms/event': +warm(started).toFixed(3), baseline: '', 'baseline ms/event': NaN, ratio: NaN },
    { case: 'page view → 1-node action done on the device (warm)', 'ms/event': +warm(ended).toFixed(3), baseline: '', 'baseline ms/event': NaN, ratio: NaN },
  ];
  console.log('\nAnalytics');
  console.table(rows);
  expect(started).toHaveLength(25);
}, 300_000);
