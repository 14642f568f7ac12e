import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type PostgresDatabase } from '../../src/server/db/postgres.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { createClient, type Client } from '../../src/index.js';
import { createTestDatabase } from '../helpers/postgres.js';

/**
 * Issue 9, done-when: three backend instances on one PostgreSQL database share
 * the run queue, the scheduler and log-trigger dispatch; one is killed in the
 * middle (its connections cut, as a crash would); every run happens exactly
 * once and every log record exists once.
 */

const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const MANUAL = 200;
const SCHEDULED = 50;
const LOGGED = 100;

describe('three instances on one PostgreSQL database', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: PostgresDatabase;
  let servers: RunningServer[] = [];
  let slow: Server;
  let slowUrl = '';
  let now = Date.parse('2030-01-01T00:00:30.000Z');

  beforeAll(async () => {
    database = await createTestDatabase('iar_instances');
    db = openPostgres({ url: database.url });
    // Runs call this endpoint, which answers after 15 ms: runs stay in flight a while without blocking the event loop.
    slow = createServer((_req, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 120));
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    slowUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}/`;
  });
  afterAll(async () => {
    for (const s of servers) await s.close().catch(() => undefined);
    await db?.close();
    await new Promise<void>((r) => (slow ? slow.close(() => r()) : r()));
    await database?.drop();
  });

  it('runs every manual, scheduled and log-triggered run exactly once across instances, through a crash', async () => {
    // Three instances start at the same time: migrations and bootstrap happen once.
    servers = await Promise.all(
      ['A', 'B', 'C'].map((name) =>
        startServer({
          memory: true,
          log: false,
          databaseUrl: database.url,
          clock: () => now,
          limits: { runsPerMinute: 1_000_000, runTimeoutMs: 5000, runLeaseMs: 2000 },
          cluster: { instanceId: `instance-${name}`, eventLeaseMs: 1500, eventPollMs: 100 },
        }),
      ),
    );
    const [a, b, c] = servers as [RunningServer, RunningServer, RunningServer];
    expect(b.bootstrap).toEqual(a.bootstrap);
    expect(c.bootstrap).toEqual(a.bootstrap);
    expect((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM organizations'))!.n).toBe(1);
    const { appId, organizationId, apiToken } = a.bootstrap;
    const clients: Client[] = servers.map((s) => createClient({ baseUrl: s.url, appId, organizationId, authToken: apiToken, clock: () => now }));
    const [ca] = clients as [Client];

    const work = await ca.App.Actions.create({
      name: 'work',
      environment: 'server',
      functions: [fn('http-request', { url: slowUrl }), fn('return', { value: '{{ n }}' })],
    });
    const tick = await ca.App.Actions.create({
      name: 'tick',
      environment: 'server',
      frequency: '* * * * *',
      timezone: 'UTC',
      triggers: [{ trigger: 'schedule' }],
      functions: [fn('return', { value: '{{ scheduledAt }}' })],
    });
    const orders = await ca.DataSources.create({ name: 'orders' });
    const onOrder = await ca.App.Actions.create({
      name: 'on-order',
      environment: 'server',
      triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: orders.id } }],
      functions: [fn('http-request', { url: slowUrl }), fn('return', { value: '{{ log.dataSourceEntryId }}' })],
    });
    for (const action of [work, tick, onOrder]) await ca.App.Actions.publish(action.id, true);
    const connections = await Promise.all(clients.map((client) => client.DataSources.connect(orders.id)));

    const fire = async (server: RunningServer, n: number) => {
      const res = await fetch(`${server.url}/v1/apps/${appId}/tasks/work/run`, {
        method: 'POST',
        headers: { 'Auth-token': apiToken, 'Content-Type': 'application/json' },
        body: JSON.stringify({ payload: { n } }),
      });
      expect(res.status).toBe(202);
    };
    const insert = (i: number, instance: number) => connections[instance]!.insert({ i });
    const unfinished = async (kind: string) =>
      (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM action_runs WHERE trigger_kind = ? AND status IN ('queued', 'running')", [kind]))!.n;
    const finishedScheduled = async () =>
      (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM action_runs WHERE trigger_kind = 'schedule' AND status IN ('succeeded', 'failed')"))!.n;
    /** One occurrence a minute on the fake clock; each finishes before the next (no overlap skips). */
    const occurrences = async (from: number, to: number, alive: RunningServer[]) => {
      for (let k = from; k <= to; k++) {
        now = Date.parse('2030-01-01T00:00:30.000Z') + k * 60_000;
        // Every live instance's scheduler looks at the same instant; the database lets one of them fire it.
        await Promise.all(alive.map((s) => s.tick()));
        await eventually(`occurrence ${k}`, async () => (await finishedScheduled()) === k);
      }
    };

    // Phase 1, three instances: the first half of the scheduled occurrences, then a burst of manual runs and entries.
    await occurrences(1, SCHEDULED / 2, servers);
    await Promise.all([
      ...Array.from({ length: MANUAL / 2 }, (_, n) => fire(servers[n % 3]!, n)),
      ...Array.from({ length: LOGGED / 2 }, (_, i) => insert(i, i % 3)),
    ]);
    // Kill C while the queue is full: runs it claimed and events it had not dispatched must be taken over.
    // Wait until C really holds a running run, so the kill always interrupts claimed work (not just queued runs).
    const heldByC = async () =>
      (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM action_runs WHERE status = 'running' AND claimed_by LIKE 'instance-C:%'"))!.n;
    await eventually('instance C to hold a running run', async () => (await heldByC()) > 0);
    const inFlightAtKill = await heldByC();
    await c.kill();

    // Phase 2, two instances: the rest of everything.
    const alive = [a, b];
    await Promise.all([
      ...Array.from({ length: MANUAL / 2 }, (_, k) => fire(alive[k % 2]!, MANUAL / 2 + k)),
      ...Array.from({ length: LOGGED / 2 }, (_, k) => insert(LOGGED / 2 + k, k % 2)),
    ]);
    await occurrences(SCHEDULED / 2 + 1, SCHEDULED, alive);
    await eventually('every run to finish', async () => {
      const counts = await db.all<{ kind: string; n: number }>('SELECT trigger_kind AS kind, COUNT(*) AS n FROM action_runs GROUP BY trigger_kind');
      const total = Object.fromEntries(counts.map((r) => [r.kind, r.n]));
      return total.manual === MANUAL && total.schedule === SCHEDULED && total.log === LOGGED && (await unfinished('manual')) + (await unfinished('log')) === 0;
    });
    await sleep(300); // nothing more may arrive late

    // Every run exactly once, and succeeded.
    const runs = await db.all<{ id: number; kind: string; status: string; payload: string; context: string; scheduledFor: string | null; attempts: number }>(
      'SELECT id, trigger_kind AS kind, status, payload, context, scheduled_for AS scheduledFor, attempts FROM action_runs ORDER BY id',
    );
    expect(runs).toHaveLength(MANUAL + SCHEDULED + LOGGED);
    expect(runs.filter((r) => r.status !== 'succeeded')).toEqual([]);
    const manualNs = runs.filter((r) => r.kind === 'manual').map((r) => JSON.parse(r.payload).n as number);
    expect(manualNs.sort((x, y) => x - y)).toEqual(Array.from({ length: MANUAL }, (_, n) => n));
    const expectedInstants = Array.from({ length: SCHEDULED }, (_, k) => new Date(Date.parse('2030-01-01T00:00:00.000Z') + (k + 1) * 60_000).toISOString());
    expect(
      runs
        .filter((r) => r.kind === 'schedule')
        .map((r) => r.scheduledFor)
        .sort(),
    ).toEqual(expectedInstants);
    const entryRows = await db.all<{ id: number }>('SELECT id FROM data_source_entries WHERE data_source_id = ? ORDER BY id', [orders.id]);
    expect(entryRows).toHaveLength(LOGGED);
    const entryIds = entryRows.map((r) => r.id);
    const triggeredEntries = runs.filter((r) => r.kind === 'log').map((r) => JSON.parse(r.context).log.dataSourceEntryId as number);
    expect(triggeredEntries.sort((x, y) => x - y)).toEqual(entryIds);

    // Every record exists once: one action log per run, with the run's result; one entry log per entry.
    const logs = await db.all<{ type: string; data: string }>('SELECT type, data FROM logs WHERE action_id IS NOT NULL');
    const byRun = new Map<number, { type: string; data: Record<string, any> }[]>();
    for (const log of logs) {
      const data = JSON.parse(log.data);
      byRun.set(data.runId, [...(byRun.get(data.runId) ?? []), { type: log.type, data }]);
    }
    expect(logs).toHaveLength(runs.length);
    for (const run of runs) {
      const mine = byRun.get(run.id) ?? [];
      expect(mine, `log records of run ${run.id}`).toHaveLength(1);
      expect(mine[0]!.type).toBe(run.kind === 'schedule' ? 'app.task.completed' : 'app.action.completed');
      const expected =
        run.kind === 'manual' ? JSON.parse(run.payload).n : run.kind === 'schedule' ? run.scheduledFor : JSON.parse(run.context).log.dataSourceEntryId;
      expect(mine[0]!.data.result).toEqual(expected);
    }
    const entryLogs = await db.all<{ entryId: number; n: number }>(
      "SELECT data_source_entry_id AS entryId, COUNT(*) AS n FROM logs WHERE type = 'dataSource.entry.create' AND data_source_id = ? GROUP BY data_source_entry_id ORDER BY data_source_entry_id",
      [orders.id],
    );
    expect(entryLogs).toEqual(entryIds.map((entryId) => ({ entryId, n: 1 })));
    // Nothing left behind: no pending event deliveries, nothing skipped or failed.
    expect((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM iar_bus_events'))!.n).toBe(0);
    expect((await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM logs WHERE type IN ('app.task.failed', 'app.task.skipped')"))!.n).toBe(0);

    // The public API agrees, from a surviving instance.
    const workLogs = await clients[1]!.App.Actions.getLogs({ id: work.id, limit: 1000 });
    expect(workLogs.logs).toHaveLength(MANUAL);

    // The crash really interrupted work that the others took over.
    expect(inFlightAtKill).toBeGreaterThan(0);
    expect(runs.filter((r) => r.attempts > 1).length).toBeGreaterThan(0);
  }, 180_000);
});
