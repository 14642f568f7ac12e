import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverHostServices } from '../../src/server/actions/host-services.js';
import { claimNextRun, finishRun, insertRun } from '../../src/server/actions/run-store.js';
import { ensureBootstrap, type Bootstrap } from '../../src/server/bootstrap.js';
import { DEFAULT_SERVER_LIMITS, type ServerContext } from '../../src/server/context.js';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openStore, type OpenedStore } from '../../src/server/db/open.js';
import { createDataSourceService, type DataSourceService } from '../../src/server/data-sources/service.js';
import { buildNotificationService } from '../../src/server/notifications/index.js';
import type { RunHosts } from '../../src/server/actions/host-services.js';
import { createRecordingPushSender } from '../../src/server/notifications/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { testEngine } from '../helpers/server.js';

/**
 * The host services of a server run end with it (issue 15): `signal` is aborted when the run ends. A call made
 * after that does not start, and a write already going when it happens is rolled back: every write path of a
 * run's data source connection, and notifications. Each write here is started, then the run "ends" (the signal is
 * aborted) before the write's transaction has finished, so the guard at its end is what decides.
 */
describe('host services of a run that ends', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let store: OpenedStore;
  let ctx: ServerContext;
  let bootstrap: Bootstrap;
  let dataSources: DataSourceService;
  let hosts: RunHosts;
  const closers: (() => void | Promise<void>)[] = [];

  beforeAll(async () => {
    database = testEngine === 'postgres' ? await createTestDatabase() : undefined;
    store = await openStore({ databaseUrl: database?.url, sqlite: { memory: true } });
    await store.startup(() => migrate(store.db, migrations));
    ctx = {
      db: store.db,
      clock: () => Date.now(),
      nowIso: () => new Date().toISOString(),
      limits: DEFAULT_SERVER_LIMITS,
      dataDir: undefined,
      instanceId: 'test',
      url: () => 'http://localhost:0',
      publicUrl: () => 'http://localhost:0',
      bus: store.bus,
      pushSender: createRecordingPushSender(),
      onClose: (fn) => void closers.push(fn),
      onTick: () => {},
    };
    ({ bootstrap } = await ensureBootstrap(store.db, ctx.nowIso()));
    dataSources = createDataSourceService(ctx);
    hosts = { dataSources, notifications: buildNotificationService(ctx).service };
  });
  afterAll(async () => {
    for (const fn of closers) await fn();
    await store?.stopBus();
    await store?.db.close();
    await database?.drop();
  });

  const system = { kind: 'system' as const };
  const runServices = () => {
    const run = new AbortController();
    return { run, services: serverHostServices(ctx, hosts, { appId: bootstrap.appId, organizationId: bootstrap.organizationId, signal: run.signal }) };
  };
  const entries = async (id: number) => (await dataSources.query(system, { id }, { type: 'select' })) as { entries: { id: number; data: unknown }[] };
  const ended = { status: 409, code: 'RUN_ENDED' };

  it('a data source write going when its run ends is rolled back, on every write path', async () => {
    const ds = await dataSources.create(system, { appId: bootstrap.appId }, { name: 'guarded' });
    const seed = await dataSources.connect(system, ds.id).insert({ n: 1 });
    const id = (seed as { id: number }).id;
    const before = await entries(ds.id);
    const writes: [string, (conn: ReturnType<ReturnType<typeof runServices>['services']['dataSources']['connect']>) => Promise<unknown>][] = [
      ['insert', (c) => c.insert({ n: 2 })],
      ['update', (c) => c.update(id, { n: 3 })],
      ['removeById', (c) => c.removeById(id)],
      ['commit', (c) => c.commit({ append: true, entries: [{ data: { n: 4 } }, { id, data: { n: 5 } }] })],
      ['query delete', (c) => c.query({ type: 'delete', where: {} })],
    ];
    for (const [name, write] of writes) {
      const { run, services } = runServices();
      const going = write(services.dataSources.connect(ds.id));
      run.abort(); // the run ends while the write is in its transaction
      await expect(going, name).rejects.toMatchObject(ended);
      expect(await entries(ds.id), name).toEqual(before);
      // And once it has ended, no call starts.
      await expect(write(services.dataSources.connect(ds.id)), `${name} after the end`).rejects.toMatchObject(ended);
      expect(await entries(ds.id), name).toEqual(before);
    }
    // A run that is still going writes as before.
    await runServices().services.dataSources.connect(ds.id).insert({ n: 6 });
    expect((await entries(ds.id)).entries).toHaveLength(2);
  });

  it("a write checks the run's queue row: once the run is recorded as finished, nothing more lands", async () => {
    const ds = await dataSources.create(system, { appId: bootstrap.appId }, { name: 'row guarded' });
    const runId = await insertRun(store.db, {
      appId: bootstrap.appId,
      organizationId: bootstrap.organizationId,
      actionId: 1,
      mode: 'on-demand',
      trigger: 'manual',
      environment: 'live',
      definition: { name: 'x', functions: [] } as never,
      payload: {},
      context: {},
      queuedAt: ctx.nowIso(),
    });
    const claimed = await claimNextRun(store.db, 'worker-a', ctx.nowIso(), new Date(Date.now() + 60_000).toISOString());
    expect(claimed?.id).toBe(runId);
    const row = { id: runId, claimedBy: 'worker-a' };
    const services = serverHostServices(ctx, hosts, {
      appId: bootstrap.appId,
      organizationId: bootstrap.organizationId,
      signal: new AbortController().signal,
      row,
    });
    const conn = services.dataSources.connect(ds.id);
    await conn.insert({ n: 1 }); // the run is going: it lands
    // Another worker's claim of the same row (the lease ran out) is not this run.
    const foreign = serverHostServices(ctx, hosts, {
      appId: bootstrap.appId,
      organizationId: bootstrap.organizationId,
      row: { id: runId, claimedBy: 'worker-b' },
    });
    await expect(foreign.dataSources.connect(ds.id).insert({ n: 2 })).rejects.toMatchObject(ended);
    // The run's end is recorded (its log is written in that same transaction); its signal has not fired yet.
    expect(await finishRun(store.db, runId, 'worker-a', 'failed', { ok: false } as never, ctx.nowIso())).toBe(true);
    await expect(conn.insert({ n: 3 })).rejects.toMatchObject(ended);
    await expect(services.notifications.create({ data: { text: 'late' } })).rejects.toMatchObject(ended);
    expect((await entries(ds.id)).entries.map((e) => e.data)).toEqual([{ n: 1 }]);
  });

  it('a notification created as its run ends is not stored', async () => {
    const count = async () => Number((await store.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM notifications'))!.n);
    const before = await count();
    const { run, services } = runServices();
    const going = services.notifications.create({ data: { text: 'late' } });
    run.abort();
    await expect(going).rejects.toMatchObject(ended);
    await expect(services.notifications.create({ data: { text: 'later' } })).rejects.toMatchObject(ended);
    expect(await count()).toBe(before);
    await runServices().services.notifications.create({ data: { text: 'live' } });
    expect(await count()).toBe(before + 1);
  });
});
