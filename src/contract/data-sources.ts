/** Public shapes of the data source REST interface, as the typed client sends and receives them. */

export type DataSourceOperation = 'select' | 'insert' | 'update' | 'delete';

/** A security rule; rules are evaluated top to bottom and the first that grants wins. */
export interface DataSourceAccessRule {
  type: DataSourceOperation[];
  /** `all`: anyone (even without a token); `loggedIn`: any token of the organization; or these API token ids. */
  allow: 'all' | 'loggedIn' | { tokens: number[] };
  /** Only these columns are returned. */
  include?: string[];
  /** These columns are never returned. */
  exclude?: string[];
  /** Limit the rule to tokens of these apps. */
  appId?: number[];
  enabled?: boolean;
}

export type DataSourceHookEvent = 'insert' | 'update' | 'beforeSave';

export type DataSourceHook =
  | {
      type: 'operations';
      runOn: DataSourceHookEvent[];
      /** Sift queries on the entry data; the hook runs when every one matches. */
      conditions?: Record<string, unknown>[];
      /** Column → `trim` | `lower` | `upper` | a `{{column}}` template (or `{ template }`). */
      payload: Record<string, string | { template: string }>;
    }
  | {
      type: 'web';
      runOn: DataSourceHookEvent[];
      conditions?: Record<string, unknown>[];
      payload: { url: string; headers?: Record<string, string>; timeoutMs?: number };
    };

export interface DataSource {
  id: number;
  name: string;
  type: string | null;
  organizationId: number;
  appId: number | null;
  public: boolean;
  encrypted: boolean;
  columns: string[] | null;
  hooks: DataSourceHook[];
  accessRules: DataSourceAccessRule[];
  definition: Record<string, unknown>;
  appCapabilities: unknown;
  createdAt: string;
  updatedAt: string;
}

/** Fields of a data source an update may change (`public` and `accessRules` need a studio token). */
export interface DataSourceChanges {
  name?: string;
  type?: string | null;
  columns?: string[] | null;
  public?: boolean;
  hooks?: DataSourceHook[];
  accessRules?: DataSourceAccessRule[];
  definition?: Record<string, unknown>;
}

export interface CreateDataSourceInput extends DataSourceChanges {
  name: string;
  /** Owning app (default: the configured app), or… */
  appId?: number;
  /** …an organization-level data source. */
  organizationId?: number;
}

export type EntryData = Record<string, unknown>;

export interface DataSourceEntry<T extends EntryData = EntryData> {
  id: number;
  dataSourceId: number;
  data: T;
  order?: number;
  createdAt: string;
  updatedAt: string;
  deletedAt?: string | null;
}

export type SortDirection = 'ASC' | 'DESC';

export interface FilterCondition {
  column: string;
  condition:
    | '=='
    | '!='
    | '>'
    | '>='
    | '<'
    | '<='
    | 'contains'
    | 'notcontains'
    | 'empty'
    | 'notempty'
    | 'between'
    | 'oneof'
    | 'dateis'
    | 'datebefore'
    | 'dateafter'
    | 'datebetween';
  value?: unknown;
  unit?: 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second';
  from?: { value: string };
  to?: { value: string };
}

/** A sift query on the entry data, plus `$filters`. */
export type Where = Record<string, unknown> & { $filters?: FilterCondition[] };

export interface JoinDefinition {
  dataSourceId?: number;
  dataSourceName?: string;
  on?: Record<string, string>;
  required?: boolean;
  has?: boolean;
  count?: boolean;
  sum?: string;
  where?: Where;
  attributes?: string[];
  limit?: number;
  order?: [string, SortDirection];
}

/** What `find` takes. */
export interface FindQuery {
  where?: Where;
  order?: [string, SortDirection][];
  /** 0 = no limit. */
  limit?: number;
  offset?: number;
  /** `id`, `data.<column>` or bare column names. */
  attributes?: string[];
  join?: Record<string, JoinDefinition>;
  /** Leave out entries equal to an earlier one as returned (useful with `attributes` that leave `id` out). */
  distinct?: boolean;
}

/** The body of `query` (POST …/data/query). */
export interface QueryBody extends FindQuery {
  type?: 'select' | 'delete';
  aggregate?: Record<string, unknown>[];
  includePagination?: boolean;
}

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
}

export interface SelectResult<T extends EntryData = EntryData> {
  entries: DataSourceEntry<T>[];
  pagination?: Pagination;
}

/** A select body of `query`: no `type: 'delete'`, no `aggregate` (its answer is a {@link SelectResult}). */
export type SelectQueryBody = QueryBody & { type?: 'select'; aggregate?: undefined };

/** What `query` answers: a select's entries (and pagination), a delete's count, or an aggregate's rows. */
export type QueryResult<T extends EntryData = EntryData> = SelectResult<T> | { deletedCount: number } | { entries: unknown[] };

export interface CommitEntry<T extends EntryData = EntryData> {
  /** Present: update that entry; absent: insert. */
  id?: number;
  data: T;
  /** Echoed back in `clientIds` with the id the entry got. */
  clientId?: string | number;
}

export interface CommitBody<T extends EntryData = EntryData> {
  entries: CommitEntry<T>[];
  /** Default false: entries not sent are removed. */
  append?: boolean;
  /** Ids to remove (with `append: true`). */
  delete?: number[];
  /** true: merge sent data into updated entries; false (default): replace it. */
  extend?: boolean;
  runHooks?: ('insert' | 'update')[];
  /** Default true: the response holds the whole data set. */
  returnEntries?: boolean;
}

/** An update of a commit that was not applied: its entry no longer exists (deleted since it was listed). */
export interface CommitItemError {
  /** Index of the update in `entries`. */
  index: number;
  id: number;
  clientId?: string | number;
  code: 'ENTRY_NOT_FOUND';
  message: string;
}

export interface CommitResult<T extends EntryData = EntryData> {
  entries?: DataSourceEntry<T>[];
  clientIds?: { id: number; clientId: string | number }[];
  /** Updates not applied (the rest of the commit was); absent when every update applied. */
  errors?: CommitItemError[];
}

export interface CommitOptions {
  /**
   * Sent as the `Idempotency-Key` header: a commit re-sent with the same key (after a lost answer) is applied
   * once, and answered again with the data set as it is then. At most 200 characters; remembered a day.
   */
  idempotencyKey?: string;
}

export interface DataSourceVersion {
  id: number;
  dataSourceId: number;
  pageId: number | null;
  userId: number | null;
  user: { id: number | null; firstName: string; lastName: string; fullName: string };
  data: { action: string; columns: string[]; entries: { count: number; key: string } };
  createdAt: string;
  updatedAt: string;
}

export interface RestoreResult {
  restored: { versionId: number; count: number };
  /** The state just before restoring, kept as a version (restore it to undo). */
  backup: DataSourceVersion;
}
