import type { Hono } from 'hono';
import type { Database } from './db/database.js';
import type { TokenRecord } from './store/identity.js';
import type { EventBus } from './events.js';
import type { PushSender } from './notifications/types.js';

/** Limits of the backend (design §9), all overridable in `startServer({ limits })`. */
export interface ServerLimits {
  runTimeoutMs: number;
  payloadChars: number;
  resultBytes: number;
  /**
   * Runs queued per app per minute, whatever their trigger (default 60): past it a manual run is refused with
   * 429 RATE_LIMITED; a log-triggered or scheduled run is not queued and recorded as `app.task.skipped`
   * (`reason: 'rate-limit'`).
   */
  runsPerMinute: number;
  /** Largest accepted request body, bytes (default 10 MB). */
  bodyBytes: number;
  /** Largest uploaded file, bytes (default 10 MB). */
  fileBytes: number;
  /** Snapshots (versions) kept per data source, newest first (default 20). */
  dataSourceVersions: number;
  /**
   * Translated selects testing or ordering by one data path of one data source (counted per instance) after
   * which that path gets an automatic index (default 50; 0: never). See docs/sql.md, "Indexes".
   */
  autoIndexAfter?: number;
  /**
   * A translated aggregation grouping by an unindexed path (SQLite) reads every entry: it counts toward the
   * path's automatic index as one query per this many entries of its data source (default 10,000), so a
   * `$group` over 1M entries builds the index at once. See docs/sql.md, "Indexes".
   */
  autoIndexScanRows?: number;
  /** Automatic indexes a data source may get (default 3); declared ones (`definition.indexes`) do not count. */
  autoIndexesPerDataSource?: number;
  /**
   * Path indexes (declared and automatic) on the entries table, which every data source of every tenant shares:
   * each costs every write of the table (SQLite: an insert took 36 µs at 100 of them, 0.9 ms at 500, 3.5 ms at
   * 1,000, against 4 µs at none). At most this many on the database (default 200) and of one organization
   * (`pathIndexesPerOrganization`, default 64); past them a declared index is 422 INDEX_LIMIT and an automatic one
   * is not built. See docs/sql.md, "Indexes".
   */
  pathIndexes?: number;
  pathIndexesPerOrganization?: number;
  /**
   * How long (real time) a claimed run belongs to its instance before another
   * instance may take it over, e.g. after a crash (default runTimeoutMs + 60 s).
   */
  runLeaseMs?: number;
  /**
   * Outbound calls (data source web hooks, the `http-request` built-in) to loopback, private, link-local
   * and similar addresses: `allow` (default; the reference server runs locally) or `deny` (src/server/http/outbound-guard.ts).
   */
  outboundPrivateNetworks?: 'allow' | 'deny';
  /** Time limit of one `http-request` call, ms (default 30 s; the node's and the run's time limits also apply). */
  outboundTimeoutMs?: number;
  /** Largest response body an `http-request` call reads, bytes (default 5 MB; never more than resultBytes). */
  outboundResponseBytes?: number;
  /** Days the backend remembers an analytics batch id, so a re-sent batch is stored once (default 30). */
  analyticsBatchIdDays?: number;
  /** Hours a data source commit's Idempotency-Key is remembered, so a re-sent commit applies once (default 24). */
  idempotencyKeyHours?: number;
  /**
   * Threads that execute server runs off the HTTP event loop (`worker_threads`, one run at a time each; default:
   * the machine's cores, `os.availableParallelism()`). 0 runs them on the HTTP thread (no isolation: a spinning
   * run delays every request until its time limit).
   */
  runThreads?: number;
  /**
   * SQLite (a database file): threads that run the budgeted reads (data source selects, counts and aggregations
   * the database runs: Database.bounded) off the HTTP thread, each with its own read-only connection (default 2;
   * docs/data-sources.md "Time budgets"). A slow read then holds one of them, not the server. 0 runs them on the
   * HTTP thread. In memory (`memory: true`) they always run there (a memory database has one connection).
   */
  sqliteReadThreads?: number;
  /** Heap limit of one run thread, MB (default 256); past it the thread's run fails with WORKER_OUT_OF_MEMORY. */
  runThreadMemoryMb?: number;
  /**
   * Linux: niceness a run thread adds to its own (default 10, 0 for none), so runs busy on every core leave the
   * HTTP thread most of the CPU; on an idle machine runs still get all of it.
   */
  runThreadNiceness?: number;
  /**
   * Runs of one app running at the same time on one instance (default: run threads − 1, at least 1, so one app
   * never holds every thread while another app's run waits; 3 with `runThreads: 0`).
   */
  appConcurrency?: number;
  /** Claims of one run (a claim comes back after a crashed instance's lease expires) before it fails with RUN_ABANDONED (default 3). */
  runAttempts?: number;
  /** Log-triggered runs in a row (each triggered by a write of the one before) before the next is skipped as a loop (default 10). */
  logTriggerChain?: number;
  /** Deepest nesting of arrays/objects accepted in a JSON body, e.g. entry data or action settings (default 256; past it 400 NESTING_TOO_DEEP). */
  bodyDepth: number;
  /**
   * Deepest nesting of a where-like input: data source `where`/`$filters`, `aggregate`, `join`, version-data
   * `where`, getLogs `where`, notification `where`/`scope`, trigger `where` (default 64; past it 400 NESTING_TOO_DEEP).
   */
  filterDepth: number;
  /**
   * Memory budget of one `aggregate`, in estimated bytes (default 64 MB): the values its stages and operators
   * build, summed over the run, and the size of any one value an operator compares or hashes, and of the result.
   * Past it 422 AGGREGATE_TOO_LARGE (query/budget.ts).
   */
  aggregateBytes: number;
  /**
   * Time budget of one `aggregate`, of the JS evaluator's matching of a `where`, and of the statements of a select
   * or aggregation the database runs (Database.bounded), ms (default 5 s; past it 422 QUERY_TIMEOUT;
   * docs/data-sources.md "Time budgets").
   */
  aggregateTimeoutMs: number;
  /**
   * Parsed entries the in-process entry cache keeps, over all data sources (default 100,000; an entry counts 1
   * whatever its size). A data source with more is never cached: what needs its whole data set reads it from the database each time, and a single-entry
   * write costs the same at any size (docs/data-sources.md, "Performance").
   */
  entryCacheEntries: number;
  /**
   * Entries one join of a query may hold, of a joined data source larger than the entry cache: the matches of its
   * `where`, read in pages (default 100,000; past it 422 JOIN_TOO_LARGE; docs/data-sources.md "Limits of queries").
   */
  joinEntries: number;
  /**
   * Distinct rows a `distinct` select may hold while it scans a data source larger than the entry cache (the first
   * match of each; default 100,000; past it 422 DISTINCT_TOO_LARGE; docs/data-sources.md "Limits of queries").
   */
  distinctRows: number;
  /**
   * Entries one select may answer with, or one aggregate run by the JS evaluator may take in (default 100,000; a
   * select without `limit`, or with a larger one, that matches more: 422 QUERY_TOO_LARGE; docs/data-sources.md
   * "Limits of queries"). Every entry of any size is `GET …/data` (streamed).
   */
  queryRows: number;
  /**
   * How long a streamed answer waits for the client to take its next page, ms (default 60 s): past it the
   * connection is closed and what the answer held (kept rows, a PostgreSQL connection) is freed
   * (docs/data-sources.md, "Streamed answers").
   */
  answerStallMs: number;
}

/**
 * Default of ServerLimits.sqliteReadThreads: two, whatever the cores, so one slow read leaves a thread to every
 * other (on the 2-core machines measured, docs/benchmarks.md "Time budgets"); more threads than cores only share them.
 */
export const DEFAULT_SQLITE_READ_THREADS = 2;

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  runTimeoutMs: 120_000,
  payloadChars: 2048,
  resultBytes: 6 * 1024 * 1024,
  runsPerMinute: 60,
  bodyBytes: 10 * 1024 * 1024,
  fileBytes: 10 * 1024 * 1024,
  dataSourceVersions: 20,
  bodyDepth: 256,
  filterDepth: 64,
  aggregateBytes: 64 * 1024 * 1024,
  aggregateTimeoutMs: 5000,
  entryCacheEntries: 100_000,
  joinEntries: 100_000,
  distinctRows: 100_000,
  queryRows: 100_000,
  answerStallMs: 60_000,
};

/** What every route module gets. */
export interface ServerContext {
  db: Database;
  /** Current time in ms (injectable for tests). */
  clock: () => number;
  /** ISO string of `clock()`. */
  nowIso: () => string;
  limits: ServerLimits;
  /** Data folder, or undefined for an in-memory server. */
  dataDir: string | undefined;
  /** This instance's id (random unless `cluster.instanceId` is given); claims carry it. */
  instanceId: string;
  /** The server's own URL, set once it listens. */
  url: () => string;
  /**
   * The URL browsers and clients reach this server at (`ServerOptions.publicUrl`, default `url()`), without a
   * trailing slash. Every URL the server hands out (pages, file links, redirects) is built from it, never from
   * the request's Host header.
   */
  publicUrl: () => string;
  bus: EventBus;
  /** Tasks to run when the server closes (timers, workers). */
  onClose: (fn: () => void | Promise<void>) => void;
  /** Background work (due scheduled items, outboxes) run by `RunningServer.tick()` at `clock()`; each concern also runs its own timer loop. */
  onTick: (fn: () => Promise<void>) => void;
  /** Push delivery (default: Web Push with the server's VAPID keys; tests inject a recording sender). */
  pushSender?: PushSender;
}

/** Checks `ServerOptions.publicUrl`: an http(s) URL without query or fragment; returned without a trailing slash. */
export function normalizePublicUrl(value: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new TypeError(`publicUrl must be an absolute http(s) URL, got "${value}"`);
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.search || parsed.hash || parsed.username || parsed.password)
    throw new TypeError(`publicUrl must be an http(s) URL without credentials, query or fragment, got "${value}"`);
  return (parsed.origin + parsed.pathname).replace(/\/+$/, '');
}

export type AppEnv = { Variables: { auth: TokenRecord | null; limits: ServerLimits } };
export type App = Hono<AppEnv>;
