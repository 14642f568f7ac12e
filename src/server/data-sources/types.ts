/** Shapes shared by the data source store, service and routes (server side). */

export type Operation = 'select' | 'insert' | 'update' | 'delete';
export const OPERATIONS: readonly Operation[] = ['select', 'insert', 'update', 'delete'];

export interface AccessRule {
  type: Operation[];
  /** `all`: anyone, even without a token; `loggedIn`: any valid token of the organization; or listed token ids. */
  allow: 'all' | 'loggedIn' | { tokens: number[] };
  /** Only these columns are returned (select). */
  include?: string[];
  /** These columns are never returned (select). */
  exclude?: string[];
  /** Restrict the rule to tokens of these apps. */
  appId?: number[];
  /** false disables the rule (default true). */
  enabled?: boolean;
}

export type HookEvent = 'insert' | 'update' | 'beforeSave';

/** A field transformation: `trim`, `lower`, `upper`, or a template such as `{{first}} {{last}}`. */
export type FieldOperation = 'trim' | 'lower' | 'upper' | string | { template: string };

export type Hook =
  | { type: 'operations'; runOn: HookEvent[]; conditions?: Record<string, unknown>[]; payload: Record<string, FieldOperation> }
  | {
      type: 'web';
      runOn: HookEvent[];
      conditions?: Record<string, unknown>[];
      payload: { url: string; headers?: Record<string, string>; timeoutMs?: number };
    };

export interface DataSourceRecord {
  id: number;
  name: string;
  type: string | null;
  organizationId: number;
  appId: number | null;
  public: boolean;
  encrypted: boolean;
  columns: string[] | null;
  hooks: Hook[];
  accessRules: AccessRule[];
  definition: Record<string, unknown>;
  appCapabilities: unknown;
  dataVersion: number;
  createdAt: string;
  updatedAt: string;
}

/** An entry as the query engine and the cache hold it. */
export interface EntryRecord {
  id: number;
  dataSourceId: number;
  data: Record<string, unknown>;
  order: number;
  createdAt: string;
  updatedAt: string;
}

/** An entry as the REST interface returns it. */
export interface EntryView extends EntryRecord {
  deletedAt: null;
}

export interface VersionRecord {
  id: number;
  dataSourceId: number;
  pageId: number | null;
  userId: number | null;
  user: { id: number | null; firstName: string; lastName: string; fullName: string };
  data: { action: string; columns: string[]; entries: { count: number; key: string } };
  createdAt: string;
  updatedAt: string;
}

export interface FileRecord {
  id: number;
  dataSourceId: number;
  organizationId: number;
  name: string;
  contentType: string;
  size: number;
  path: string;
  encrypted: boolean;
  iv: string | null;
  authTag: string | null;
  createdAt: string;
}
