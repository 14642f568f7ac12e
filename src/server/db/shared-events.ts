import type { EventBus, Listener, LogEvent } from '../events.js';
import type { PostgresDatabase } from './postgres.js';

/**
 * The event bus of an instance that shares its PostgreSQL database with other
 * instances. Same interface and same local semantics as the in-process bus
 * (listeners of the emitting instance get each event on a microtask), plus
 * durability across instances:
 *
 * - every emitted event is also written to `iar_bus_events`, leased to the
 *   emitting instance; the row is deleted once this instance's listeners have
 *   finished with the event;
 * - every instance polls the table for events whose lease ran out (their
 *   instance died before its listeners finished) and delivers them to its own
 *   listeners, claiming each with `FOR UPDATE SKIP LOCKED` so one instance
 *   takes it.
 *
 * Delivery is therefore at least once across a crash: listeners must be
 * idempotent (the log-trigger dispatcher is: a run per (log, action) carries
 * an idempotency key). Leases use the database's clock, not the injectable
 * `ctx.clock` (a fake clock must not stall or hasten failover).
 */
export interface SharedEventBus extends EventBus {
  /** Resolves when the events emitted by this instance so far are recorded and delivered. */
  flush(): Promise<void>;
  /** Stops polling and waits for work in progress. */
  stop(): Promise<void>;
}

export interface SharedEventBusOptions {
  instanceId: string;
  /** How long an instance owns an event before others may deliver it (default 30 s). */
  leaseMs?: number;
  /** How often to look for orphaned events (default 1 s). */
  pollMs?: number;
}

export const SHARED_EVENTS_DDL = [
  `CREATE TABLE IF NOT EXISTS iar_bus_events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload TEXT NOT NULL,
    emitted_by TEXT NOT NULL,
    claimed_by TEXT NOT NULL,
    lease_until TIMESTAMPTZ NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 1,
    created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
  )`,
  'CREATE INDEX IF NOT EXISTS iar_bus_events_lease ON iar_bus_events (lease_until)',
];

/** Creates the table (idempotent; run under the start-up lock). */
export async function installSharedEvents(db: PostgresDatabase): Promise<void> {
  for (const statement of SHARED_EVENTS_DDL) await db.query(statement);
}

// A terminated instance, or a poll before the start-up created the table.
const quiet = (error: unknown) => ['DB_TERMINATED', '42P01'].includes((error as { code?: string })?.code ?? '');

export function createSharedEventBus(db: PostgresDatabase, options: SharedEventBusOptions): SharedEventBus {
  const listeners = new Set<Listener>();
  const leaseMs = options.leaseMs ?? 30_000;
  const pending = new Set<Promise<unknown>>();
  let stopped = false;
  let polling: Promise<void> | undefined;

  const track = <T>(p: Promise<T>) => {
    pending.add(p);
    void p.finally(() => pending.delete(p)).catch(() => undefined);
    return p;
  };
  const report = (what: string) => (error: unknown) => {
    if (!quiet(error)) console.error(`[in-app-runtime server] ${what}`, error);
  };

  /** Runs every listener on the event; resolves when all have settled. */
  const deliver = (event: LogEvent): Promise<void> =>
    Promise.allSettled(
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

  const remove = (ids: number[]) =>
    ids.length ? db.query('DELETE FROM iar_bus_events WHERE id = ANY($1::bigint[]) AND claimed_by = $2', [`{${ids.join(',')}}`, options.instanceId]) : Promise.resolve([]);

  /** Takes over events whose lease ran out and delivers them here. */
  const poll = async () => {
    const rows = await db.query<{ id: number; payload: string }>(
      `UPDATE iar_bus_events SET claimed_by = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond', attempts = attempts + 1
       WHERE id IN (SELECT id FROM iar_bus_events WHERE lease_until < clock_timestamp() ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
       RETURNING id, payload`,
      [options.instanceId, leaseMs],
    );
    rows.sort((a, b) => a.id - b.id);
    for (const row of rows) {
      await deliver(JSON.parse(row.payload) as LogEvent);
      await remove([row.id]);
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
      if (stopped) return;
      const delivered = deliver(event);
      const recorded = db
        .query<{ id: number }>(
          `INSERT INTO iar_bus_events (payload, emitted_by, claimed_by, lease_until)
           VALUES ($1, $2, $2, clock_timestamp() + $3 * interval '1 millisecond') RETURNING id`,
          [JSON.stringify(event), options.instanceId, leaseMs],
        )
        .then((rows) => rows[0]!.id);
      track(
        Promise.all([recorded, delivered])
          .then(([id]) => remove([id]))
          .catch(report('recording a shared event failed')),
      );
      track(delivered);
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
