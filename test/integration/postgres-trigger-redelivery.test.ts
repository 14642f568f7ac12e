import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type PostgresDatabase } from '../../src/server/db/postgres.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { eventually } from '../helpers/wait.js';

/**
 * PostgreSQL delivers a log event again when the instance that wrote it died before recording its delivery
 * (db/shared-events.ts). The log-trigger dispatcher is idempotent per (event, action): a redelivered event
 * queues no second run and records no second `app.task.skipped` (issue 15).
 */
describe('log triggers of a redelivered event (PostgreSQL)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: PostgresDatabase;
  let b: TestBackend;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = openPostgres({ url: database.url });
    b = await startTestBackend({ databaseUrl: database.url, cluster: { eventPollMs: 50 }, limits: { runsPerMinute: 5 } });
  });
  afterAll(async () => {
    await b?.close();
    await db?.close();
    await database?.drop();
  });

  const count = async (sql: string) => Number((await db.get<{ n: number }>(sql))!.n);

  it('records one run or one skip per event and action, however often the event is delivered', async () => {
    const watched = await b.client.DataSources.create({ name: 'watched' });
    const action = await b.client.App.Actions.create({
      name: 'on-entry',
      triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: watched.id } }],
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ log.dataSourceEntryId }}' } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    const conn = await b.client.DataSources.connect(watched.id);
    await conn.commit({ append: true, returnEntries: false, entries: Array.from({ length: 30 }, (_, i) => ({ data: { n: i } })) });

    const runs = () => count(`SELECT COUNT(*) AS n FROM action_runs WHERE action_id = ${action.id}`);
    const skips = () => count(`SELECT COUNT(*) AS n FROM logs WHERE action_id = ${action.id} AND type = 'app.task.skipped'`);
    await eventually(async () => (await runs()) === 5 && (await skips()) === 25, 30_000);
    const completed = () => count(`SELECT COUNT(*) AS n FROM logs WHERE action_id = ${action.id} AND type = 'app.action.completed'`);
    await eventually(async () => (await completed()) === 5, 30_000);

    // The writing instance "died" before recording the deliveries: every event is pending again, lease run out.
    const events = await count(`SELECT COUNT(*) AS n FROM logs WHERE type = 'dataSource.entry.create' AND data_source_id = ${watched.id}`);
    expect(events).toBe(30);
    await db.run(
      `INSERT INTO iar_bus_events (log_id, claimed_by, lease_until)
       SELECT id, 'dead instance', clock_timestamp() - interval '1 second' FROM logs WHERE type = 'dataSource.entry.create' AND data_source_id = ?`,
      [watched.id],
    );
    // Redelivered by the poller (each delivery is recorded as done once its listeners finished).
    await eventually(async () => (await count('SELECT COUNT(*) AS n FROM iar_bus_events')) === 0, 30_000);
    expect(await runs()).toBe(5);
    expect(await skips()).toBe(25);
    const skipped = await b.client.App.Actions.getLogs({ id: action.id, limit: 100, where: { type: 'app.task.skipped' } });
    expect(skipped.logs).toHaveLength(25);
    expect((await b.client.App.Actions.getLogs({ id: action.id, limit: 100 })).logs).toHaveLength(5);
  }, 60_000);
});
