import type { ServerContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import type { Database, Queryable } from '../db/database.js';
import type { PostgresDatabase } from '../db/postgres.js';
import type { SqliteDatabase } from '../db/sqlite.js';
import { dialectOf } from './sql/select.js';

/**
 * Expression indexes of data paths (issue 14, item 3; docs/sql.md "Indexes"). One index per (data source,
 * path): a partial index `WHERE data_source_id = <id>` on the path's sort key (sql/keys.ts: rank, number,
 * text) then `sort_order, id DESC`, so it serves equality and ranges on the path (select.ts adds the key
 * test) and `order` by it (the page stops after its rows). Listed in `data_source_indexes` with their origin:
 * `declared` (`definition.indexes`, created and dropped when the definition changes) or `auto` (after
 * `limits.autoIndexAfter` translated queries on the path, at most `limits.autoIndexesPerDataSource` per data
 * source). A path may also have a descending index (key `desc:<path>`, sql/prefilter.ts `descKey`): an `order` by the
 * path DESC walks it forward in exactly that order with its tie-breakers (walking the ascending one backward
 * reverses them, so each group of equal keys was sorted). All are dropped with their data source. On PostgreSQL they are built CONCURRENTLY (writes go
 * on); SQLite holds its write lock while it builds one (about 1 s per 300,000 entries, docs/benchmarks.md), on a
 * thread of its own for a database file (sqlite.ts `slowDdl`): reads go on, writes wait.
 */
export type IndexOrigin = 'declared' | 'auto';

import { indexedPathOf, indexName } from './sql/prefilter.js';
export { indexName };

/** The CREATE INDEX statement of a path (exported for tests). */
export function indexDdl(engine: 'sqlite' | 'postgres', dataSourceId: number, path: string): string {
  if (!Number.isSafeInteger(dataSourceId) || dataSourceId <= 0) throw new Error(`Invalid data source id ${dataSourceId}`);
  const { path: data, desc } = indexedPathOf(path);
  const key = dialectOf(engine).sortKey(data.split('.'), 'data');
  const how = engine === 'postgres' ? 'CREATE INDEX CONCURRENTLY IF NOT EXISTS' : 'CREATE INDEX IF NOT EXISTS';
  // Descending (`desc:<path>`): the key DESC, the tie-breakers as in every order (`sort_order`, `id DESC`).
  const keys = desc ? `${key.rank} DESC, ${key.num} DESC, ${key.txt} DESC` : `${key.rank}, ${key.num}, ${key.txt}`;
  return `${how} ${indexName(dataSourceId, path)} ON data_source_entries (${keys}, sort_order, id DESC) WHERE data_source_id = ${dataSourceId}`;
}

/**
 * The DROP INDEX statement of an index. On PostgreSQL CONCURRENTLY: data_source_entries is shared by every data
 * source of every tenant, and a plain DROP INDEX takes an ACCESS EXCLUSIVE lock on it, which waits behind any read
 * in progress while every later read and write of every tenant queues behind the DROP.
 */
const dropDdl = (db: Database, name: string) => `DROP INDEX ${db.dialect === 'postgres' ? 'CONCURRENTLY ' : ''}IF EXISTS ${name}`;

/**
 * Runs DDL outside any transaction (PostgreSQL: untranslated, on the pool, as CONCURRENTLY needs). A `slow` one
 * (a build) runs off the main thread on SQLite (`slowDdl`).
 */
async function ddl(db: Database, text: string, slow = false): Promise<void> {
  if (db.dialect === 'postgres') await (db as PostgresDatabase).query(text);
  else if (slow) await (db as SqliteDatabase).slowDdl(text);
  else await db.run(text);
}

export interface IndexRow {
  path: string;
  origin: IndexOrigin;
  name: string;
}

export const listIndexes = (db: Queryable, dataSourceId: number) =>
  db.all<IndexRow>('SELECT path, origin, name FROM data_source_indexes WHERE data_source_id = ? ORDER BY path', [dataSourceId]);

export async function indexedPaths(db: Queryable, dataSourceId: number): Promise<Set<string>> {
  return new Set((await listIndexes(db, dataSourceId)).map((row) => row.path));
}

/**
 * Runs index work one piece at a time on this instance: a limit check and the builds it allows (declared or
 * automatic) are one piece, so requests at the same moment cannot each see room for the same last index (a build
 * is listed only once built). Instances of one PostgreSQL database each have their own: together they may pass a
 * limit by the builds of the other instances under way.
 */
export type IndexGate = <T>(work: () => Promise<T>) => Promise<T>;

export function createIndexGate(): IndexGate {
  let last: Promise<unknown> = Promise.resolve();
  return (work) => {
    const next = last.then(work, work);
    last = next.catch(() => undefined);
    return next;
  };
}

/** Defaults of `limits.pathIndexes` and `limits.pathIndexesPerOrganization` (context.ts). */
export const DEFAULT_PATH_INDEXES = 200;
export const DEFAULT_PATH_INDEXES_PER_ORGANIZATION = 64;

/**
 * Why `adding` more path indexes of the organization would pass a limit (its message), or undefined when there is
 * room. Counted from the listings: call it inside the instance's IndexGate, with the builds it allows.
 */
export async function indexLimitPassed(ctx: ServerContext, organizationId: number, adding: number): Promise<string | undefined> {
  if (adding <= 0) return undefined;
  const row = await ctx.db.get<{ total: number | string; own: number | string | null }>(
    'SELECT COUNT(*) AS total, SUM(CASE WHEN d.organization_id = ? THEN 1 ELSE 0 END) AS own FROM data_source_indexes i JOIN data_sources d ON d.id = i.data_source_id',
    [organizationId],
  );
  const total = Number(row?.total ?? 0);
  const own = Number(row?.own ?? 0);
  const perOrganization = ctx.limits.pathIndexesPerOrganization ?? DEFAULT_PATH_INDEXES_PER_ORGANIZATION;
  const all = ctx.limits.pathIndexes ?? DEFAULT_PATH_INDEXES;
  if (own + adding > perOrganization)
    return `this organization's data sources have ${own} path indexes (declared and automatic); ${adding} more would pass the limit of ${perOrganization} (limits.pathIndexesPerOrganization)`;
  if (total + adding > all) return `${adding} more path indexes would pass the backend's limit of ${all} on its shared entries table (limits.pathIndexes)`;
  return undefined;
}

/**
 * 422 INDEX_LIMIT when building the declared indexes of `paths` that the data source does not have yet would pass
 * a limit (checked before anything is saved).
 */
export async function checkDeclaredIndexRoom(
  ctx: ServerContext,
  organizationId: number,
  dataSourceId: number | undefined,
  paths: readonly string[],
): Promise<void> {
  const have = dataSourceId === undefined ? new Set<string>() : await indexedPaths(ctx.db, dataSourceId);
  const passed = await indexLimitPassed(ctx, organizationId, paths.filter((path) => !have.has(path)).length);
  if (passed) throw new HttpError(422, 'INDEX_LIMIT', `definition.indexes: ${passed}`);
}

/** Builds the index of a path (if missing) and lists it. A build that fails leaves nothing behind. */
export async function createPathIndex(ctx: ServerContext, dataSourceId: number, path: string, origin: IndexOrigin): Promise<void> {
  const { db } = ctx;
  try {
    await ddl(db, indexDdl(db.dialect, dataSourceId, path), true);
  } catch (error) {
    await ddl(db, dropDdl(db, indexName(dataSourceId, path))).catch(() => undefined);
    throw error;
  }
  const listed = await db.run(
    'INSERT OR IGNORE INTO data_source_indexes (data_source_id, path, origin, name, created_at) SELECT id, ?, ?, ?, ? FROM data_sources WHERE id = ?',
    [path, origin, indexName(dataSourceId, path), ctx.nowIso(), dataSourceId],
  );
  // The data source was deleted meanwhile: its index goes too.
  if (listed.changes === 0 && !(await indexedPaths(db, dataSourceId)).has(path)) await ddl(db, dropDdl(db, indexName(dataSourceId, path)));
}

export async function dropPathIndex(db: Database, dataSourceId: number, path: string): Promise<void> {
  await db.run('DELETE FROM data_source_indexes WHERE data_source_id = ? AND path = ?', [dataSourceId, path]);
  await ddl(db, dropDdl(db, indexName(dataSourceId, path)));
}

/** Before a data source is deleted: its indexes go (and its entries are deleted faster without them). */
export async function dropAllIndexes(db: Database, dataSourceId: number): Promise<void> {
  for (const row of await listIndexes(db, dataSourceId)) await dropPathIndex(db, dataSourceId, row.path);
}

/**
 * After a data source's row is deleted: any index of it still on the table is dropped. An automatic build that began
 * before the row went may list its index after dropAllIndexes ran, and the row's delete then removes the listing
 * but not the index. Names are read from the catalog and must be ours (`iar_dsi_<id>_<hex>`, indexName).
 */
export async function dropLeftoverIndexes(db: Database, dataSourceId: number): Promise<void> {
  const names =
    db.dialect === 'postgres'
      ? await db.all<{ name: string }>(`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'data_source_entries'`)
      : await db.all<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'data_source_entries'`);
  const ours = new RegExp(`^iar_dsi_${dataSourceId}_[0-9a-f]{12}$`);
  for (const { name } of names) if (ours.test(name)) await ddl(db, dropDdl(db, name));
}

/** Makes the declared indexes those of `paths`: builds the missing ones, adopts automatic ones, drops the rest. */
export async function syncDeclaredIndexes(ctx: ServerContext, dataSourceId: number, paths: readonly string[]): Promise<void> {
  const rows = await listIndexes(ctx.db, dataSourceId);
  const wanted = new Set(paths);
  for (const row of rows) {
    if (row.origin === 'declared' && !wanted.has(row.path)) await dropPathIndex(ctx.db, dataSourceId, row.path);
    if (row.origin === 'auto' && wanted.has(row.path))
      await ctx.db.run(`UPDATE data_source_indexes SET origin = 'declared' WHERE data_source_id = ? AND path = ?`, [dataSourceId, row.path]);
  }
  const have = new Set(rows.map((row) => row.path));
  for (const path of wanted) if (!have.has(path)) await createPathIndex(ctx, dataSourceId, path, 'declared');
}
