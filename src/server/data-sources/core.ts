import { randomUUID } from 'node:crypto';
import type { ServerContext } from '../context.js';
import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { canSee, type Caller } from './access.js';
import { createAutoIndexes, type AutoIndexes } from './auto-indexes.js';
import { createIndexGate, type IndexGate } from './indexes.js';
import { createEntryCache, type EntryCache } from './cache.js';
import { createFileStorage, type FileStorage } from './files.js';
import { createWebHookRunner, type Matcher } from './hooks.js';
import { compileWhere } from './engine.js';
import { findDataSourceById, findDataSourcesByName, bumpDataVersion } from './store/data-sources.js';
import { createSummaryMemo, summaryOf, type DataSetSummary, type SummaryMemo } from './summary.js';
import { insertLogs, type LogInit } from './store/logs.js';
import { markLogEvents } from '../db/shared-events.js';
import { insertVersion, pruneVersions } from './store/versions.js';
import type { DataSourceRecord, EntryRecord, EntryView } from './types.js';

/** Shared machinery of the data source service: context, entry cache, file storage, hooks, snapshots, logs. */
export interface Core {
  ctx: ServerContext;
  cache: EntryCache;
  /** Count, columns and next order of data sources the entry cache does not hold (summary.ts). */
  summaries: SummaryMemo;
  /** Path indexes built for paths queried often (auto-indexes.ts). */
  autoIndexes: AutoIndexes;
  /** Index limit checks and the builds they allow, one at a time (indexes.ts). */
  indexBuilds: IndexGate;
  files: FileStorage;
  webhooks: ReturnType<typeof createWebHookRunner>;
  matcher: Matcher;
}

export function createCore(ctx: ServerContext): Core {
  let files: FileStorage | undefined;
  const indexBuilds = createIndexGate();
  const autoIndexes = createAutoIndexes(ctx, indexBuilds);
  return {
    ctx,
    cache: createEntryCache({ maxEntries: ctx.limits.entryCacheEntries }),
    summaries: createSummaryMemo(),
    autoIndexes,
    indexBuilds,
    // Created on first use so a server that never stores a file makes no folder.
    get files() {
      return (files ??= createFileStorage(ctx));
    },
    webhooks: createWebHookRunner(ctx),
    matcher: (where) => compileWhere(where),
  };
}

/** A data source addressed by id, or by name inside an organization. */
export type DataSourceRef = { id: number } | { name: string; organizationId?: number };

const callerOrganization = (caller: Caller): number | undefined =>
  caller.kind === 'token' ? caller.token?.organizationId : caller.kind === 'app' ? caller.organizationId : undefined;

export const callerAppId = (caller: Caller): number | null =>
  caller.kind === 'token' ? (caller.token?.appId ?? null) : caller.kind === 'app' ? caller.appId : null;

/**
 * The answer for a data source the caller cannot see, the same as for one that does not exist (issue 15, no
 * probing): without a token 401 `MISSING_TOKEN`, else 404 `DATA_SOURCE_NOT_FOUND`; the message names only what
 * the caller sent.
 */
function notVisible(ref: DataSourceRef, caller: Caller): HttpError {
  const label = 'id' in ref ? `Data source ${ref.id}` : `Data source "${ref.name}"`;
  if (caller.kind === 'token' && caller.token === null)
    return new HttpError(401, 'MISSING_TOKEN', `${label} is not public or does not exist: this request needs an Auth-token header`);
  return new HttpError(404, 'DATA_SOURCE_NOT_FOUND', `${label} not found`);
}

/**
 * Finds a data source the caller may see (any operation, or public), else answers as for a missing one
 * (notVisible): an id or a name of another tenant tells nothing. A name is looked up in the caller's
 * organization (or `organizationId`).
 */
export async function resolveDataSource(db: Queryable, ref: DataSourceRef, caller: Caller): Promise<DataSourceRecord> {
  if ('id' in ref) {
    const ds = await findDataSourceById(db, ref.id);
    if (!ds || !canSee(ds, caller)) throw notVisible(ref, caller);
    return ds;
  }
  const own = callerOrganization(caller);
  const organizationId = ref.organizationId ?? own;
  const found = await findDataSourcesByName(db, ref.name, organizationId);
  // Without a token, a name may only reach a public data source, and must be unambiguous.
  const candidates = organizationId === undefined ? found.filter((d) => d.public) : found.filter((d) => canSee(d, caller));
  if (candidates.length === 0) throw notVisible(ref, caller);
  if (candidates.length > 1)
    throw new HttpError(400, 'AMBIGUOUS_NAME', `Several public data sources are named "${ref.name}": address it by id or add organizationId`);
  return candidates[0]!;
}

export const toView = (entry: EntryRecord): EntryView => ({
  id: entry.id,
  dataSourceId: entry.dataSourceId,
  data: entry.data,
  order: entry.order,
  createdAt: entry.createdAt,
  updatedAt: entry.updatedAt,
  deletedAt: null,
});

/** Default order of entries: `order` ASC, then `id` DESC. */
export const byDefaultOrder = (a: EntryRecord, b: EntryRecord) => a.order - b.order || b.id - a.id;

/**
 * Records the state before a change (`state`: the data set at `data_version` `state.version`, or its summary) as
 * a version, and prunes old versions. Nothing is copied: the version is rebuilt on read from the entries and the
 * changes after it (store/changes.ts), so the cost is that of the change, not of the data set.
 */
export async function takeSnapshot(
  core: Core,
  tx: Queryable,
  ds: DataSourceRecord,
  state: { version: number; entries: readonly EntryRecord[] } | DataSetSummary,
  action: string,
  caller: Caller,
): Promise<number> {
  const token = caller.kind === 'token' ? caller.token : null;
  const summary = 'count' in state ? state : summaryOf(ds, state);
  const id = await insertVersion(tx, {
    dataSourceId: ds.id,
    action,
    columns: summary.columns,
    count: summary.count,
    key: `data-sources/${ds.id}/versions/at-${summary.version}-${randomUUID()}`,
    dataVersion: summary.version,
    userId: token?.id ?? null,
    userName: token?.name ?? (caller.kind === 'app' ? 'App action' : 'System'),
    now: core.ctx.nowIso(),
  });
  await pruneVersions(tx, ds.id, Math.max(1, core.ctx.limits.dataSourceVersions));
  return id;
}

export type EntryEventType = 'dataSource.entry.create' | 'dataSource.entry.update' | 'dataSource.entry.delete';

export interface EntryEvent {
  type: EntryEventType;
  entryId: number;
  columns: string[];
}

/**
 * Records entry events in the logs table (inside the write's transaction) and returns the log records
 * to emit on the bus once the transaction committed.
 */
export async function writeEntryLogs(core: Core, tx: Queryable, ds: DataSourceRecord, caller: Caller, events: readonly EntryEvent[]) {
  const appId = ds.appId ?? callerAppId(caller);
  const createdAt = core.ctx.nowIso();
  const logs: LogInit[] = events.map((event) => ({
    type: event.type,
    appId,
    organizationId: ds.organizationId,
    dataSourceId: ds.id,
    dataSourceEntryId: event.entryId,
    // A write of a log-triggered run records its chain, so the triggers it fires can stop a loop.
    data: caller.kind === 'app' && caller.chain ? { columns: event.columns, chain: caller.chain } : { columns: event.columns },
    createdAt,
  }));
  const ids = await insertLogs(tx, logs);
  // PostgreSQL with several instances: these events reach the triggers even if this instance dies before emitting.
  await markLogEvents(core.ctx.db, tx, ids);
  const out = logs.map((log, i) => ({ ...log, id: ids[i]! }));
  return out;
}

export function emitLogs(core: Core, logs: readonly (LogInit & { id: number })[]): void {
  for (const log of logs)
    core.ctx.bus.emit({
      id: log.id,
      type: log.type,
      appId: log.appId,
      organizationId: log.organizationId,
      dataSourceId: log.dataSourceId ?? null,
      dataSourceEntryId: log.dataSourceEntryId ?? null,
      appNotificationId: null,
      sessionId: null,
      data: log.data,
      createdAt: log.createdAt,
    });
}

export { bumpDataVersion };
