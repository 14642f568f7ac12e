import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionLog } from '../../src/contract/actions.js';
import { createClient, type Client } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Fairness and per-app limits of server runs (issue 15): fair claims across apps with a per-app cap, and
 * log-triggered runs counted against the app's runs per minute, a refused one recorded as app.task.skipped.
 */
const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

async function published(client: Client, definition: Parameters<Client['App']['Actions']['create']>[0]) {
  const action = await client.App.Actions.create(definition);
  await client.App.Actions.publish(action.id, true);
  return action;
}

const logsOf = async (client: Client, id: number, type?: string): Promise<ActionLog[]> =>
  (await client.App.Actions.getLogs({ id, limit: 1000, ...(type ? { where: { type } } : {}) })).logs;

describe('fair queueing across apps', () => {
  let b: TestBackend;
  beforeAll(async () => {
    // One thread: every run waits for the one slot, so the claim order is all that decides.
    b = await startTestBackend({ limits: { runThreads: 1, runsPerMinute: 1000 } });
  });
  afterAll(() => b.close());

  it("one app's long queue delays another app's run by one run slot at most", async () => {
    // Each run reports when it started (read inside the run, on the same machine clock as the test's).
    const busy = await published(b.client, {
      name: 'busy',
      functions: [fn('script', { code: 'const t = Date.now(); while (Date.now() - t < 150) {} return t;' })],
    });
    const other = await b.server.createOrganization('Other');
    const second = createClient({ baseUrl: b.url, appId: other.appId, organizationId: other.organizationId, authToken: other.apiToken });
    const quick = await published(second, { name: 'quick', functions: [fn('script', { code: 'return Date.now();' })] });

    const QUEUED = 30;
    for (let i = 0; i < QUEUED; i++) await b.client.App.Actions.run('busy');
    // Once the first app's runs are going, the second app's run is queued behind all of them.
    await eventually(async () => (await logsOf(b.client, busy.id)).length >= 1);
    await second.App.Actions.run('quick');
    const queuedBy = Date.now();
    const [quickLog] = await eventually(async () => {
      const logs = await logsOf(second, quick.id);
      return logs.length === 1 && logs;
    }, 30_000);
    const quickStart = quickLog!.data.result as number;
    await eventually(async () => (await logsOf(b.client, busy.id)).length === QUEUED, 30_000);
    const starts = (await logsOf(b.client, busy.id)).map((log) => log.data.result as number);
    // Between its queueing and its start, at most one run of the first app began (a claim racing the queueing);
    // a slow machine only stretches the times, not this count. Most of the first app's queue ran after it.
    expect(starts.filter((t) => t > queuedBy && t < quickStart).length).toBeLessThanOrEqual(1);
    expect(starts.filter((t) => t > quickStart).length).toBeGreaterThanOrEqual(5);
  }, 60_000);
});

describe('per-app limits of triggered runs', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { runsPerMinute: 20 } });
  });
  afterAll(() => b.close());

  it('a 100-entry commit to a log-watched data source queues 20 runs; each refused run is recorded as skipped', async () => {
    const watched = await b.client.DataSources.create({ name: 'watched' });
    const action = await published(b.client, {
      name: 'on-entry',
      triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: watched.id } }],
      functions: [fn('return', { value: '{{ log.dataSourceEntryId }}' })],
    });
    const conn = await b.client.DataSources.connect(watched.id);
    await conn.commit({ append: true, returnEntries: false, entries: Array.from({ length: 100 }, (_, i) => ({ data: { n: i } })) });

    const skipped = await eventually(async () => {
      const list = await logsOf(b.client, action.id, 'app.task.skipped');
      return list.length >= 80 && list;
    }, 30_000);
    const runs = await eventually(async () => {
      const list = await logsOf(b.client, action.id);
      return list.length === 20 && list;
    }, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(await logsOf(b.client, action.id)).toHaveLength(20);
    expect(runs.every((log) => log.type === 'app.action.completed')).toBe(true);
    expect((await logsOf(b.client, action.id, 'app.task.skipped')).length).toBe(skipped.length);
    expect(runs.length + skipped.length).toBe(100);
    for (const log of skipped) {
      expect(log.data).toMatchObject({ trigger: 'log', actionId: action.id });
      expect(log.data.result).toMatchObject({ reason: 'rate-limit', limit: 20, retryAt: expect.any(String), logId: expect.any(Number) });
    }
    // Manual runs share the window: refused with 429 while it is full.
    const manual = await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/tasks/on-entry/run`, { json: {} });
    expect(manual.status).toBe(429);
    expect(manual.body.error.code).toBe('RATE_LIMITED');
  }, 60_000);
});

describe('per-app limits of scheduled runs', () => {
  let now = Date.parse('2025-01-01T10:00:30Z');
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ clock: () => now, limits: { runsPerMinute: 2 } });
  });
  afterAll(() => b.close());

  it("an occurrence over the app's runs per minute is recorded as skipped (rate-limit), the schedule goes on", async () => {
    const actions: { id: number }[] = [];
    for (const name of ['every-a', 'every-b', 'every-c']) {
      actions.push(
        await published(b.client, {
          name,
          frequency: '* * * * *',
          triggers: [{ trigger: 'schedule' }],
          functions: [fn('return', { value: '{{ scheduledAt }}' })],
        }),
      );
    }
    now = Date.parse('2025-01-01T10:01:00Z');
    await b.server.tick();
    // Three occurrences at 10:01 for a limit of 2 per minute: one of them is skipped and logged.
    const skipped = await eventually(async () => {
      const all = (await Promise.all(actions.map((a) => logsOf(b.client, a.id, 'app.task.skipped')))).flat();
      return all.length === 1 && all;
    });
    expect(skipped[0]!.data.result).toMatchObject({
      reason: 'rate-limit',
      scheduledAt: '2025-01-01T10:01:00.000Z',
      count: 1,
      limit: 2,
      retryAt: expect.any(String),
    });
    const completed = await eventually(async () => {
      const all = (await Promise.all(actions.map((a) => logsOf(b.client, a.id)))).flat();
      return all.length === 2 && all;
    });
    expect(completed.every((log) => log.type === 'app.task.completed')).toBe(true);
    // A minute later the window has room again.
    now = Date.parse('2025-01-01T10:02:00Z');
    await b.server.tick();
    await eventually(async () => (await Promise.all(actions.map((a) => logsOf(b.client, a.id)))).flat().length === 4);
  }, 30_000);
});

describe('per-app concurrency above one', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { runThreads: 4, appConcurrency: 2, runsPerMinute: 1000 } });
  });
  afterAll(() => b.close());

  /** Most intervals that hold one instant (each `[start, end]` was read inside its run, while it was claimed). */
  const mostAtOnce = (intervals: [number, number][]) => {
    const edges = intervals.flatMap(([s, e]) => [[s, 1] as const, [e, -1] as const]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    let now = 0;
    let most = 0;
    for (const [, d] of edges) most = Math.max(most, (now += d));
    return most;
  };
  const code = 'const s = Date.now(); while (Date.now() - s < 300) {} return [s, Date.now()];';

  it('an app runs up to appConcurrency runs at once, and the other threads serve another app meanwhile', async () => {
    const wide = await published(b.client, { name: 'wide', functions: [fn('script', { code })] });
    const other = await b.server.createOrganization('Other');
    const second = createClient({ baseUrl: b.url, appId: other.appId, organizationId: other.organizationId, authToken: other.apiToken });
    const narrow = await published(second, { name: 'narrow', functions: [fn('script', { code })] });

    for (let i = 0; i < 6; i++) await b.client.App.Actions.run('wide');
    for (let i = 0; i < 4; i++) await second.App.Actions.run('narrow');
    const intervalsOf = async (client: Client, id: number, n: number) =>
      eventually(async () => {
        const logs = await logsOf(client, id);
        return logs.length === n && logs.map((log) => log.data.result as [number, number]);
      }, 30_000);
    const first = await intervalsOf(b.client, wide.id, 6);
    const others = await intervalsOf(second, narrow.id, 4);
    // Two at once per app, never three; and more than two at once across both apps (the cap is per app).
    expect(mostAtOnce(first)).toBe(2);
    expect(mostAtOnce(others)).toBe(2);
    expect(mostAtOnce([...first, ...others])).toBeGreaterThan(2);
  }, 60_000);
});
