import type { ClientContext } from '../core/context.js';
import { ClientError, isApiError } from '../http/errors.js';
import { addressOf, checkId, checkObject } from './paths.js';
import type {
  CommitBody,
  CommitOptions,
  CommitResult,
  DataSourceEntry,
  DataSourceVersion,
  EntryData,
  FindQuery,
  Pagination,
  QueryBody,
  QueryResult,
  RestoreResult,
  SelectQueryBody,
  SelectResult,
  Where,
} from '../contract/data-sources.js';

/** Operations on the entries of one data source (`Client.DataSources.connect(idOrName)`). */
export interface DataSourceConnection {
  /** Every entry in the default order (`GET …/data`), a page of them with `limit` / `offset`. */
  list<T extends EntryData = EntryData>(options?: { limit?: number; offset?: number }): Promise<DataSourceEntry<T>[]>;
  /** Entries matching the query (`where`, `order`, `limit`, `offset`, `attributes`, `join`). */
  find<T extends EntryData = EntryData>(query?: FindQuery): Promise<DataSourceEntry<T>[]>;
  /** The first match, or null. */
  findOne<T extends EntryData = EntryData>(query?: FindQuery): Promise<DataSourceEntry<T> | null>;
  /** The entry, or null when it does not exist. */
  findById<T extends EntryData = EntryData>(id: number): Promise<DataSourceEntry<T> | null>;
  /**
   * The raw query endpoint. A select answers `{ entries }`, plus `pagination` with `includePagination: true`;
   * `type: 'delete'` answers `{ deletedCount }`; `aggregate` answers `{ entries }` (the pipeline's rows).
   */
  query<T extends EntryData = EntryData>(body: SelectQueryBody & { includePagination: true }): Promise<SelectResult<T> & { pagination: Pagination }>;
  query<T extends EntryData = EntryData>(body: SelectQueryBody): Promise<SelectResult<T>>;
  query(body: QueryBody & { type: 'delete' }): Promise<{ deletedCount: number }>;
  query(body: QueryBody & { aggregate: Record<string, unknown>[] }): Promise<{ entries: unknown[] }>;
  query<T extends EntryData = EntryData>(body: QueryBody): Promise<QueryResult<T>>;
  /** Inserts an entry; a FormData body may carry files. */
  insert<T extends EntryData = EntryData>(data: T | FormData): Promise<DataSourceEntry<T>>;
  /** Merges `data` into the entry (shallow; `null` is stored as a value). */
  update<T extends EntryData = EntryData>(id: number, data: Partial<NoInfer<T>>): Promise<DataSourceEntry<T>>;
  removeById(id: number): Promise<void>;
  /** Replaces every entry with `entries` (or appends them with `{ append: true }`); `[]` empties the data source. */
  import(entries: EntryData[], options?: { append?: boolean }): Promise<void>;
  /**
   * Inserts, updates and deletes in one request. Converges with a stale list: deleting an id that is gone is a
   * no-op, updating one is reported in `errors` while the rest applies; `idempotencyKey` makes a retry apply once.
   */
  commit<T extends EntryData = EntryData>(body: CommitBody<T>, options?: CommitOptions): Promise<CommitResult<T>>;
  /** Distinct values of a column (`a.b` reaches nested values). */
  getIndex(column: string): Promise<unknown[]>;
  getIndexes(columns: string[]): Promise<Record<string, unknown[]>>;
  /** Snapshots of the data source, newest first. */
  versions(): Promise<DataSourceVersion[]>;
  /** Entries of a snapshot. */
  versionEntries(versionId: number, options?: { limit?: number; where?: Where }): Promise<DataSourceEntry[]>;
  /** Makes the entries exactly those of the snapshot (the current state is kept as a new version first). */
  restore(versionId: number): Promise<RestoreResult>;
}

const isFormData = (value: unknown): value is FormData => typeof FormData !== 'undefined' && value instanceof FormData;

/** A connection to one data source; no request is made until a method is called. */
export function createDataSourceConnection(ctx: ClientContext, idOrName: number | string): DataSourceConnection {
  const { segment, query: flag } = addressOf(idOrName);
  const base = `v1/data-sources/${segment}`;
  const request = <T>(
    method: string,
    path: string,
    options: { json?: unknown; body?: BodyInit; query?: Record<string, string | number | boolean | undefined>; headers?: Record<string, string> } = {},
  ) => ctx.http.request<T>(method, base + path, { ...options, query: { ...flag, ...(options.query ?? {}) } });

  const select = async <T extends EntryData>(query: FindQuery | undefined, limit?: number) => {
    const body = query === undefined ? {} : { ...checkObject(query, 'The query') };
    if ('type' in body || 'aggregate' in body) throw new ClientError('INVALID_ARGUMENT', 'find() only selects entries: use query() for aggregate or delete');
    if (limit !== undefined) body.limit = limit;
    const result = await request<{ entries: DataSourceEntry<T>[] }>('POST', '/data/query', { json: body });
    return result.entries;
  };

  const connection: DataSourceConnection = {
    async list(options = {}) {
      return (await request<{ entries: never[] }>('GET', '/data', { query: { limit: options.limit, offset: options.offset } })).entries;
    },
    find: <T extends EntryData>(query?: FindQuery) => select<T>(query),
    async findOne<T extends EntryData>(query?: FindQuery) {
      return (await select<T>(query, 1))[0] ?? null;
    },
    async findById(id) {
      checkId(id, 'The entry id');
      try {
        return await request('GET', `/data/${id}`);
      } catch (error) {
        if (isApiError(error) && error.code === 'ENTRY_NOT_FOUND') return null;
        throw error;
      }
    },
    async query(body: QueryBody) {
      // The overloads above narrow the answer by the body; the endpoint answers each shape.
      return request<never>('POST', '/data/query', { json: checkObject(body, 'The query body') });
    },
    async insert(data) {
      if (isFormData(data)) return request('PUT', '/data', { body: data });
      return request('PUT', '/data', { json: checkObject(data, 'The entry data') });
    },
    async update(id, data) {
      checkId(id, 'The entry id');
      return request('PUT', `/data/${id}`, { json: checkObject(data, 'The entry data') });
    },
    async removeById(id) {
      checkId(id, 'The entry id');
      await request('DELETE', `/data/${id}`);
    },
    async import(entries, options = {}) {
      if (!Array.isArray(entries)) throw new ClientError('INVALID_ARGUMENT', 'import() takes an array of entry data objects');
      entries.forEach((e, i) => checkObject(e, `entries[${i}]`));
      await request('POST', '/data', { json: { entries, append: options.append ?? false } });
    },
    async commit(body, options = {}) {
      checkObject(body, 'The commit body');
      if (!Array.isArray(body.entries)) throw new ClientError('INVALID_ARGUMENT', 'commit() needs an `entries` array');
      const key = options.idempotencyKey;
      if (key !== undefined && (typeof key !== 'string' || key === '' || key.length > 200))
        throw new ClientError('INVALID_ARGUMENT', 'commit() idempotencyKey must be a string of 1 to 200 characters');
      return request('POST', '/commit', { json: body, headers: key === undefined ? undefined : { 'Idempotency-Key': key } });
    },
    async getIndex(column) {
      if (typeof column !== 'string' || column.trim() === '' || column.includes(','))
        throw new ClientError('INVALID_ARGUMENT', 'getIndex() takes one column name');
      return (await connection.getIndexes([column]))[column] ?? [];
    },
    async getIndexes(columns) {
      if (!Array.isArray(columns) || columns.length === 0 || columns.some((c) => typeof c !== 'string' || c.trim() === '' || c.includes(',')))
        throw new ClientError('INVALID_ARGUMENT', 'getIndexes() takes a non-empty array of column names');
      const result = await request<{ indexes: Record<string, unknown[]> }>('GET', `/indexes/${columns.map(encodeURIComponent).join(',')}`);
      return result.indexes;
    },
    async versions() {
      return (await request<{ versions: DataSourceVersion[] }>('GET', '/versions')).versions;
    },
    async versionEntries(versionId, options = {}) {
      checkId(versionId, 'The version id');
      const result = await request<{ entries: DataSourceEntry[] }>('POST', `/versions/${versionId}/data`, { json: options });
      return result.entries;
    },
    async restore(versionId) {
      checkId(versionId, 'The version id');
      return request('POST', `/versions/${versionId}/restore`);
    },
  };
  return connection;
}
