import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap, type Bootstrap } from '../../src/server/bootstrap.js';
import { DEFAULT_SERVER_LIMITS, type ServerContext } from '../../src/server/context.js';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { createEventBus, type LogEvent } from '../../src/server/events.js';
import { createDataSourceService, type Caller, type DataSourceService } from '../../src/server/data-sources/service.js';
import { startTestBackend } from '../helpers/server.js';

/** The service layer as server-side code (app action runs) uses it: no HTTP, real database and bus. */
describe('data source service (server-side connection and bus events)', () => {
  let ctx: ServerContext;
  let bootstrap: Bootstrap;
  let service: DataSourceService | undefined;
  /** The one service of this context, as startServer builds it (server/services.ts). */
  const dataSourceServiceOnce = () => (service ??= createDataSourceService(ctx));
  const closers: (() => void | Promise<void>)[] = [];
  const events: LogEvent[] = [];
  let now = Date.parse('2025-01-02T03:04:05.000Z');

  beforeAll(async () => {
    const db = openSqlite({ memory: true });
    await migrate(db, migrations);
    ctx = {
      db,
      clock: () => now,
      nowIso: () => new Date(now).toISOString(),
      limits: DEFAULT_SERVER_LIMITS,
      dataDir: undefined,
      instanceId: 'test',
      url: () => 'http://localhost:0',
      publicUrl: () => 'http://localhost:0',
      bus: createEventBus(),
      onClose: (fn) => {
        closers.push(fn);
      },
      onTick: () => {},
    };
    ({ bootstrap } = await ensureBootstrap(db, ctx.nowIso()));
    ctx.bus.on((event) => {
      events.push(event);
    });
  });
  afterAll(async () => {
    for (const fn of closers) await fn();
    await ctx.db.close();
  });

  const appCaller = (): Caller => ({ kind: 'app', appId: bootstrap.appId, organizationId: bootstrap.organizationId });

  it('emits dataSource.entry.* events after the write, with the log record shape of log triggers', async () => {
    const service = dataSourceServiceOnce();
    const ds = await service.create(appCaller(), { appId: bootstrap.appId }, { name: 'Orders' });
    const conn = service.connect(appCaller(), 'Orders');
    const entry = (await conn.insert({ item: 'tea', qty: 2 })) as { id: number };
    now += 1000;
    await conn.update(entry.id, { qty: 3 });
    await conn.removeById(entry.id);
    await new Promise((r) => setTimeout(r, 10));
    expect(events.map((e) => e.type)).toEqual(['dataSource.entry.create', 'dataSource.entry.update', 'dataSource.entry.delete']);
    expect(events[0]).toEqual({
      id: expect.any(Number),
      type: 'dataSource.entry.create',
      appId: bootstrap.appId,
      organizationId: bootstrap.organizationId,
      dataSourceId: ds.id,
      dataSourceEntryId: entry.id,
      appNotificationId: null,
      sessionId: null,
      data: { columns: ['item', 'qty'] },
      createdAt: '2025-01-02T03:04:05.000Z',
    });
    expect(events[1]!.createdAt).toBe('2025-01-02T03:04:06.000Z');
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
  });

  it('gives DataSourceConnectionLike results detached from the cache, and null for a missing entry', async () => {
    const service = dataSourceServiceOnce();
    await service.create(appCaller(), { appId: bootstrap.appId }, { name: 'Detached' });
    const conn = service.connect(appCaller(), 'Detached');
    await conn.commit({ entries: [{ data: { n: 1 } }, { data: { n: 2 } }] });
    const found = (await conn.find({ order: [['data.n', 'ASC']] })) as { data: { n: number } }[];
    found[0]!.data.n = 99; // mutating a result must not change what is stored or cached
    const again = (await conn.find({ order: [['data.n', 'ASC']] })) as { data: { n: number } }[];
    expect(again.map((e) => e.data.n)).toEqual([1, 2]);
    expect(((await conn.findOne({ where: { n: 2 } })) as { data: unknown }).data).toEqual({ n: 2 });
    expect(await conn.findById(987654)).toBeNull();
    expect(await conn.query({ type: 'delete', where: { n: 1 } })).toEqual({ deletedCount: 1 });
  });

  it('holds an app caller to the access rules', async () => {
    const service = dataSourceServiceOnce();
    const ds = await service.create({ kind: 'system' }, { organizationId: bootstrap.organizationId }, { name: 'Locked' });
    await service.update({ kind: 'system' }, { id: ds.id }, { accessRules: [{ type: ['insert'], allow: { tokens: [999] } }] });
    const conn = service.connect(appCaller(), ds.id);
    // No right at all for this app: the data source is not visible, as if missing (issue 15, no probing).
    await expect(conn.find()).rejects.toMatchObject({ status: 404, code: 'DATA_SOURCE_NOT_FOUND' });
    await expect(conn.insert({ a: 1 })).rejects.toMatchObject({ status: 404 });
  });
});

describe('entry cache with two servers on one database', () => {
  it('never serves stale entries written by the other process', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ds-two-'));
    const a = await startTestBackend({ dataDir });
    const b = await startTestBackend({ dataDir });
    try {
      const ds = await a.client.DataSources.create({ name: 'Shared' });
      const onA = await a.client.DataSources.connect(ds.id);
      const onB = await b.client.DataSources.connect(ds.id);
      await onA.import([{ n: 1 }]);
      expect((await onB.find()).map((e) => e.data.n)).toEqual([1]); // B caches version 1
      await onA.insert({ n: 2 });
      expect((await onB.find({ order: [['data.n', 'ASC']] })).map((e) => e.data.n)).toEqual([1, 2]);
      const [first] = await onB.find({ where: { n: 1 } });
      await onB.update(first!.id, { n: 10 });
      expect((await onA.find({ order: [['data.n', 'ASC']] })).map((e) => e.data.n)).toEqual([2, 10]);
      await onB.removeById(first!.id);
      expect((await onA.find()).map((e) => e.data.n)).toEqual([2]);
    } finally {
      await a.close();
      await b.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
