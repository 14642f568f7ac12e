import type { EventBus, Listener, LogEvent } from '../events.js';
import type { Database, Queryable } from './database.js';
import type { PostgresDatabase } from './postgres.js';

/**
 * The event bus of an instance that shares its PostgreSQL database with other
 * instances. Same interface and same local semantics as the in-process bus
 * (the emitting instance's listeners get each event on a microtask), made
 * durable across instances for log events:
 *
 * 1. The code that writes a log record the bus will carry calls
 *    `markLogEvents(db, tx, logIds)` in the same transaction: on PostgreSQL
 *    this records a pending delivery per log (`iar_bus_events`), leased to the
 *    writing instance (columns defaulted from the connection's settings).
 * 2. After the commit it emits as usual; once this instance's listeners have
 *    finished with the event, the pending delivery is deleted.
 * 3. Every instance polls for pending deliveries whose lease ran out (their
 *    instance died in between), claims them with `FOR UPDATE SKIP LOCKED`,
 *    rebuilds the event from the `logs` row and delivers it to its own
 *    listeners. So an entry written on instance A reaches the triggers even if
 *    A dies right after the commit.
 *
 * Delivery is at least once across a crash: listeners must be idempotent (the
 * log-trigger dispatcher is: a run per (log, action) carries an idempotency
 * key). Leases use the database clock, not the injectable `ctx.clock` (a fake
 * clock must neither stall nor hasten failover). Events whose `id` is not a
 * marked log are delivered in-process only, as on SQLite.
 */
export interface SharedEventBus extends EventBus {
  /** Resolves when this instance's deliveries so far are done and recorded. */
  flush(): Promise<void>;
  /** Stops polling and waits for work in progress. */
  stop(): Promise<void>;
}

export interface SharedEventBusOptions {
  /** The connection's `application_name`: who holds a lease. */
  owner: string;
  /** How long an instance owns an event before others may deliver it (default 30 s). */
  leaseMs?: number;
  /** How often to look for orphaned events (default 1 s). */
  pollMs?: number;
}

/** Connection setting read by the table's default lease. */
export const EVENT_LEASE_SETTING = 'iar.event_lease_ms';

export const SHARED_EVENTS_DDL = [
  `CREATE TABLE IF NOT EXISTS iar_bus_events (
    log_id BIGINT PRIMARY KEY REFERENCES logs(id) ON DELETE CASCADE,
    claimed_by TEXT NOT NULL DEFAULT current_setting('application_name'),
    lease_until TIMESTAMPTZ NOT NULL
      DEFAULT clock_timestamp() + COALESCE(current_setting('${EVENT_LEASE_SETTING}', true), '30000')::bigint * interval '1 millisecond',
    attempts INTEGER NOT NULL DEFAULT 1
  )`,
  'CREATE INDEX IF NOT EXISTS iar_bus_events_lease ON iar_bus_events (lease_until)',
];

/** Creates the table (idempotent; run under the start-up lock, after the migrations). */
export async function installSharedEvents(db: PostgresDatabase): Promise<void> {
  for (const statement of SHARED_EVENTS_DDL) await db.query(statement);
}

/**
 * Call in the transaction that inserts log records which will be emitted on
 * the bus: makes their delivery survive a crash of this instance (PostgreSQL;
 * nothing to do on SQLite, where one process does everything).
 */
export async function markLogEvents(db: Pick<Database, 'dialect'>, tx: Queryable, logIds: readonly number[]): Promise<void> {
  if (db.dialect !== 'postgres' || logIds.length === 0) return;
  for (let i = 0; i < logIds.length; i += 500) {
    const chunk = logIds.slice(i, i + 500);
    await tx.run(`INSERT INTO iar_bus_events (log_id) VALUES ${chunk.map(() => '(?)').join(', ')} ON CONFLICT (log_id) DO NOTHING`, chunk);
  }
}

interface LogRow {
  id: number;
  type: string;
  app_id: number | null;
  organization_id: number | null;
  data_source_id: number | null;
  data_source_entry_id: number | null;
  data: string;
  created_at: string;
}

/** The event a log row was emitted as (the shape of the data source and analytics emitters). */
export function eventOfLog(row: LogRow): LogEvent {
  let data: unknown;
  try {
    data = JSON.parse(row.data);
  } catch {
    data = {};
  }
  return {
    id: row.id,
    type: row.type,
    appId: row.app_id,
    organizationId: row.organization_id,
    dataSourceId: row.data_source_id,
    dataSourceEntryId: row.data_source_entry_id,
    appNotificationId: null,
    sessionId: null,
    data,
    createdAt: row.created_at,
  };
}

// A terminated instance, or a poll before the start-up created the table.
const quiet = (error: unknown) => ['DB_TERMINATED', '42P01'].includes((error as { code?: string })?.code ?? '');

export function createSharedEventBus(db: PostgresDatabase, options: SharedEventBusOptions): SharedEventBus {
  const listeners = new Set<Listener>();
  const leaseMs = options.leaseMs ?? 30_000;
  const pending = new Set<Promise<unknown>>();
  let stopped = false;
  let polling: Promise<void> | undefined;

  const track = (p: Promise<unknown>) => {
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  const report = (what: string) => (error: unknown) => {
    if (!quiet(error)) console.error(`[in-app-runtime server] ${what}`, error);
  };

  /** Runs every listener on the event; resolves when all have settled. */
  const deliver = (event: LogEvent): Promise<void> =>
    Promise.all(
      [...listeners].map(
        (listener) =>
          new Promise<void>((resolve) => {
            queueMicrotask(() => {
              Promise.resolve()
                .then(() => listener(event))
                .catch(report('event listener failed'))
                .finally(resolve);
            });
          }),
      ),
    ).then(() => undefined);

  // By log id alone: whoever delivered it, the delivery is done (and a URL's own application_name cannot get in the way).
  const done = (logId: number) => db.query('DELETE FROM iar_bus_events WHERE log_id = $1', [logId]);

  /** Takes over deliveries whose lease ran out and delivers them here. */
  const poll = async () => {
    const rows = await db.query<LogRow>(
      `WITH claimed AS (
         UPDATE iar_bus_events SET claimed_by = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond', attempts = attempts + 1
         WHERE log_id IN (SELECT log_id FROM iar_bus_events WHERE lease_until < clock_timestamp() ORDER BY log_id LIMIT 100 FOR UPDATE SKIP LOCKED)
         RETURNING log_id)
       SELECT l.id, l.type, l.app_id, l.organization_id, l.data_source_id, l.data_source_entry_id, l.data, l.created_at
       FROM claimed c JOIN logs l ON l.id = c.log_id ORDER BY l.id`,
      [options.owner, leaseMs],
    );
    for (const row of rows) {
      await deliver(eventOfLog(row));
      await done(row.id);
    }
  };
  const pollOnce = () => {
    polling ??= poll()
      .catch(report('shared event poll failed'))
      .finally(() => (polling = undefined));
    return polling;
  };
  const timer = setInterval(() => {
    if (!stopped) void pollOnce();
  }, options.pollMs ?? 1000);
  timer.unref?.();

  return {
    on(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit(event) {
      const delivered = deliver(event);
      if (typeof event.id === 'number') {
        const id = event.id;
        track(delivered.then(() => done(id)).catch(report('recording a delivered event failed')));
      } else track(delivered);
    },
    async flush() {
      while (pending.size) await Promise.allSettled([...pending]);
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await polling;
      while (pending.size) await Promise.allSettled([...pending]);
    },
  };
}
