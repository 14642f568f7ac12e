import type { ServerContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import type { DataSourceConnectionLike, DataQuery } from '../../contract/pipeline.js';
import { assertCallerLive, type Caller } from './access.js';
import { importEntries, queryEntries, versionsOf } from './bulk-ops.js';
import { restoreVersion } from './version-restore.js';
import { versionEntries } from './version-data.js';
import { listAllEntries } from './list-entries.js';
import { commitEntries, type CommitAnswerOptions, type CommitIdempotency } from './commit.js';
import { createCore, type Core, type DataSourceRef } from './core.js';
import { createOne, deleteOne, getOne, listOf, updateOne, type DataSourceScope } from './data-source-ops.js';
import { querySelectWithSql } from './sql-query.js';
import { deleteEntry, getEntry, getIndexes, insertEntry, readFileOf, updateEntry, type UploadedFile } from './entry-ops.js';

export type { Caller } from './access.js';
export type { DataSourceRef } from './core.js';
export type { UploadedFile } from './entry-ops.js';

/**
 * The data source service: every operation of the REST interface as a plain function of (caller, …), so that
 * routes and server-side app action runs share one implementation (access rules, hooks, logs, versions).
 */
export function createDataSourceService(ctx: ServerContext) {
  const core: Core = createCore(ctx);
  const svc = {
    core,
    list: (caller: Caller, scope: DataSourceScope & { type?: unknown }) => listOf(core, caller, scope),
    get: (caller: Caller, ref: DataSourceRef) => getOne(core, caller, ref),
    create: (caller: Caller, scope: DataSourceScope, body: Record<string, unknown>) => createOne(core, caller, scope, body),
    update: (caller: Caller, ref: DataSourceRef, body: Record<string, unknown>) => updateOne(core, caller, ref, body),
    remove: (caller: Caller, ref: DataSourceRef) => deleteOne(core, caller, ref),
    getEntry: (caller: Caller, ref: DataSourceRef, id: number) => getEntry(core, caller, ref, id),
    insert: (caller: Caller, ref: DataSourceRef, data: unknown, files?: readonly UploadedFile[]) => insertEntry(core, caller, ref, data, files),
    updateEntry: (caller: Caller, ref: DataSourceRef, id: number, data: unknown) => updateEntry(core, caller, ref, id, data),
    deleteEntry: (caller: Caller, ref: DataSourceRef, id: number) => deleteEntry(core, caller, ref, id),
    indexes: (caller: Caller, ref: DataSourceRef, columns: readonly string[]) => getIndexes(core, caller, ref, columns),
    import: (caller: Caller, ref: DataSourceRef, entries: unknown, append: boolean) => importEntries(core, caller, ref, entries, append),
    /** `GET …/data` without a page: the entries, or their pages (list-entries.ts). */
    listAll: (caller: Caller, ref: DataSourceRef) => listAllEntries(core, caller, ref),
    commit: (caller: Caller, ref: DataSourceRef, body: Record<string, unknown>, idempotency?: CommitIdempotency, options?: CommitAnswerOptions) =>
      commitEntries(core, caller, ref, body, idempotency, options),
    // Selects the database can answer exactly run as SQL (sql-query.ts); the rest on the JS evaluator.
    // One time budget for both: the JS evaluator has what is left after the database's attempt.
    query: async (caller: Caller, ref: DataSourceRef, body: unknown) => {
      const started = Date.now();
      return (await querySelectWithSql(core, caller, ref, body)) ?? queryEntries(core, caller, ref, body, started);
    },
    versions: (caller: Caller, ref: DataSourceRef) => versionsOf(core, caller, ref),
    versionEntries: (caller: Caller, ref: DataSourceRef, versionId: number, options: { limit?: unknown; where?: unknown }) =>
      versionEntries(core, caller, ref, versionId, options),
    restore: (caller: Caller, ref: DataSourceRef, versionId: number) => restoreVersion(core, caller, ref, versionId),
    file: (caller: Caller, ref: DataSourceRef, fileId: number) => readFileOf(core, caller, ref, fileId),
    /** A connection for server-side code (pipeline runs), with the shape the pipeline engine expects. */
    connect: (caller: Caller, idOrName: number | string): DataSourceConnectionLike => createServerConnection(svc, caller, idOrName),
  };
  return svc;
}

export type DataSourceService = ReturnType<typeof createDataSourceService>;

/** `123` is an id; any other string (or a digit string given as `{ name }`) is a name. */
export function toRef(idOrName: number | string | { name: string }): DataSourceRef {
  if (typeof idOrName === 'object') return { name: idOrName.name };
  if (typeof idOrName === 'number') {
    if (!Number.isSafeInteger(idOrName) || idOrName <= 0) throw new HttpError(400, 'INVALID_PARAMETER', `Invalid data source id ${idOrName}`);
    return { id: idOrName };
  }
  if (idOrName.trim() === '') throw new HttpError(400, 'INVALID_PARAMETER', 'A data source name must not be empty');
  return /^\d+$/.test(idOrName) ? { id: Number(idOrName) } : { name: idOrName };
}

/** Results leave the service detached from the entry cache (callers may change them freely). */
const detach = <T>(value: T): T => (value === undefined ? value : structuredClone(value));

export function createServerConnection(svc: Omit<DataSourceService, 'connect'>, caller: Caller, idOrName: number | string): DataSourceConnectionLike {
  const ref = toRef(idOrName);
  const connection: DataSourceConnectionLike = connectionOf(svc, caller, ref);
  // No call of a run starts once the run has ended (a write already going is rolled back: assertCallerLiveIn).
  return Object.fromEntries(
    Object.entries(connection).map(([name, method]) => [
      name,
      async (...args: unknown[]) => {
        assertCallerLive(caller);
        return (method as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as unknown as DataSourceConnectionLike;
}

function connectionOf(svc: Omit<DataSourceService, 'connect'>, caller: Caller, ref: DataSourceRef): DataSourceConnectionLike {
  const select = async (query: DataQuery = {}) => {
    const result = await svc.query(caller, ref, { ...query, type: 'select' });
    return 'entries' in result ? result.entries : [];
  };
  return {
    find: async (query) => detach(await select(query)),
    findOne: async (query) => detach((await select({ ...(query ?? {}), limit: 1 }))[0] ?? null),
    findById: async (id) => {
      try {
        return detach(await svc.getEntry(caller, ref, id));
      } catch (error) {
        if (error instanceof HttpError && error.code === 'ENTRY_NOT_FOUND') return null;
        throw error;
      }
    },
    insert: async (data) => detach(await svc.insert(caller, ref, data)),
    update: async (id, data) => detach(await svc.updateEntry(caller, ref, id, data)),
    removeById: async (id) => {
      await svc.deleteEntry(caller, ref, id);
      return {};
    },
    query: async (body) => detach(await svc.query(caller, ref, body)),
    commit: async (body) => detach(await svc.commit(caller, ref, body)),
  };
}
