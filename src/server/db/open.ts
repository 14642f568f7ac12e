import { randomUUID } from 'node:crypto';
import { createEventBus, type EventBus } from '../events.js';
import type { Database } from './database.js';
import { createSharedEventBus, EVENT_LEASE_SETTING, installSharedEvents } from './shared-events.js';

/** Settings of an instance that shares a PostgreSQL database with others. */
export interface ClusterOptions {
  /** Name of this instance in claims and `pg_stat_activity` (default a random UUID). */
  instanceId?: string;
  /** PostgreSQL pool size (default 10). */
  poolSize?: number;
  /** How long an emitted event is owned by its instance before another may deliver it (default 30 s). */
  eventLeaseMs?: number;
  /** How often an instance looks for orphaned events (default 1 s). */
  eventPollMs?: number;
}

/** The database of one backend instance, with the event bus that fits it. */
export interface OpenedStore {
  db: Database;
  bus: EventBus;
  instanceId: string;
  /**
   * Runs start-up work (migrations, bootstrap) so that instances starting at
   * the same time do it one after the other (a PostgreSQL advisory lock).
   */
  startup<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Starts the threads that run the SQLite store's budgeted reads (Database.bounded) off the main thread: a
   * database file only (db/sqlite-readers/pool.ts). Nothing on PostgreSQL (its reads run in its own processes)
   * nor in memory. `db.close()` stops them.
   */
  startReaders(threads: number): Promise<void>;
  /** Stops the bus (polling, pending event records); call before `db.close()`. */
  stopBus(): Promise<void>;
  /** Cuts the database connections at once, as a crash would (PostgreSQL); closes SQLite. */
  kill(): Promise<void>;
}

export function isPostgresUrl(url: string | undefined): url is string {
  return typeof url === 'string' && /^postgres(ql)?:\/\//i.test(url);
}

/**
 * Opens the store the options name. Its driver is imported here, when needed (pg and better-sqlite3 are optional
 * peer dependencies: an instance on one engine needs only that engine's package).
 */
export async function openStore(options: {
  databaseUrl?: string;
  sqlite: { file?: string; memory?: boolean };
  cluster?: ClusterOptions;
}): Promise<OpenedStore> {
  const instanceId = options.cluster?.instanceId ?? randomUUID();
  if (options.databaseUrl !== undefined) {
    if (!isPostgresUrl(options.databaseUrl)) throw new Error('databaseUrl must be a postgres:// or postgresql:// URL');
    const { openPostgres } = await import('./postgres.js');
    // application_name names the instance: pending event deliveries default to it (shared-events.ts).
    const owner = `iar ${instanceId}`.slice(0, 63);
    const leaseMs = options.cluster?.eventLeaseMs ?? 30_000;
    const db = openPostgres({
      url: options.databaseUrl,
      max: options.cluster?.poolSize,
      applicationName: owner,
      settings: { [EVENT_LEASE_SETTING]: Math.round(leaseMs) },
    });
    const bus = createSharedEventBus(db, { owner, leaseMs, pollMs: options.cluster?.eventPollMs });
    return {
      db,
      bus,
      instanceId,
      startup: (fn) =>
        db.withAdvisoryLock('in-app-runtime:startup', async () => {
          const result = await fn();
          await installSharedEvents(db);
          return result;
        }),
      startReaders: async () => undefined,
      stopBus: () => bus.stop(),
      kill: () => db.terminate(),
    };
  }
  const { openSqlite } = await import('./sqlite.js');
  const db = openSqlite(options.sqlite);
  return {
    db,
    bus: createEventBus(),
    instanceId,
    startup: (fn) => fn(),
    startReaders: (threads) => db.startReaders(threads),
    stopBus: async () => undefined,
    kill: () => db.close(),
  };
}
