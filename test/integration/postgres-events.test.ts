import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogEvent } from '../../src/server/events.js';
import { openPostgres, type PostgresDatabase } from '../../src/server/db/postgres.js';
import { createSharedEventBus, EVENT_LEASE_SETTING, installSharedEvents, markLogEvents, type SharedEventBus } from '../../src/server/db/shared-events.js';
import { createTestDatabase } from '../helpers/postgres.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_MS = 300;

describe('shared event bus on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const open = (owner: string) => openPostgres({ url: database.url, applicationName: owner, settings: { [EVENT_LEASE_SETTING]: LEASE_MS } });
  let a: PostgresDatabase;
  let b: PostgresDatabase;
  let busA: SharedEventBus;
  let busB: SharedEventBus;
  const seenA: LogEvent[] = [];
  const seenB: LogEvent[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    a = open('A');
    b = open('B');
    await a.run(`CREATE TABLE logs (
      id INTEGER PRIMARY KEY, type TEXT NOT NULL, app_id INTEGER, organization_id INTEGER, data_source_id INTEGER,
      data_source_entry_id INTEGER, data TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL)`);
    await installSharedEvents(a);
    busA = createSharedEventBus(a, { owner: 'A', leaseMs: LEASE_MS, pollMs: 50 });
    busB = createSharedEventBus(b, { owner: 'B', leaseMs: LEASE_MS, pollMs: 50 });
    busA.on((e) => void seenA.push(e));
    busB.on((e) => void seenB.push(e));
  });
  afterAll(async () => {
    await busA?.stop();
    await busB?.stop();
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  const writeLog = (db: PostgresDatabase, entryId: number) =>
    db.transaction(async (tx) => {
      const row = await tx.get<{ id: number }>(
        `INSERT INTO logs (type, app_id, organization_id, data_source_id, data_source_entry_id, data, created_at)
         VALUES ('dataSource.entry.create', 1, 1, 7, ?, '{"columns":["x"]}', '2030-01-01T00:00:00.000Z') RETURNING id`,
        [entryId],
      );
      await markLogEvents(db, tx, [row!.id]);
      return row!.id;
    });
  const pending = async () => (await a.get<{ n: number }>('SELECT COUNT(*) AS n FROM iar_bus_events'))!.n;

  it('delivers an emitted event once, on the emitting instance, and clears its pending record', async () => {
    const id = await writeLog(a, 1);
    expect(await pending()).toBe(1);
    busA.emit({ id, type: 'dataSource.entry.create', appId: 1, organizationId: 1, dataSourceEntryId: 1 });
    await busA.flush();
    expect(await pending()).toBe(0);
    await sleep(LEASE_MS * 2 + 100);
    expect(seenA.map((e) => e.id)).toEqual([id]);
    expect(seenB).toEqual([]);
  });

  it('hands the event of an instance that died after its commit to another instance, once', async () => {
    const doomed = open('C');
    const id = await writeLog(doomed, 2);
    await doomed.terminate(); // died before emitting
    const end = Date.now() + 5000;
    while (!seenA.concat(seenB).some((e) => e.id === id) && Date.now() < end) await sleep(20);
    await sleep(LEASE_MS * 2 + 100);
    const deliveries = [...seenA, ...seenB].filter((e) => e.id === id);
    expect(deliveries).toEqual([
      {
        id,
        type: 'dataSource.entry.create',
        appId: 1,
        organizationId: 1,
        dataSourceId: 7,
        dataSourceEntryId: 2,
        appNotificationId: null,
        sessionId: null,
        data: { columns: ['x'] },
        createdAt: '2030-01-01T00:00:00.000Z',
      },
    ]);
    expect(await pending()).toBe(0);
  });

  it('marks nothing on SQLite', async () => {
    let called = false;
    await markLogEvents({ dialect: 'sqlite' }, { run: async () => ((called = true), { changes: 0 }), all: async () => [], get: async () => undefined }, [1]);
    expect(called).toBe(false);
  });
});
