/** Shapes shared by the data source store, service and routes (server side). */

import type { DataSource, DataSourceAccessRule, DataSourceHook, DataSourceHookEvent, DataSourceOperation } from '../../contract/data-sources.js';

// The wire shapes are the client's (src/contract/data-sources.ts); the server adds what it keeps internally.
export type Operation = DataSourceOperation;
export const OPERATIONS: readonly Operation[] = ['select', 'insert', 'update', 'delete'];
export type AccessRule = DataSourceAccessRule;
export type HookEvent = DataSourceHookEvent;
export type Hook = DataSourceHook;
/** A field transformation: `trim`, `lower`, `upper`, or a template such as `{{first}} {{last}}`. */
export type FieldOperation = Extract<DataSourceHook, { type: 'operations' }>['payload'][string];

export interface DataSourceRecord extends DataSource {
  /** Bumped on every write; keys the parsed-entries cache across processes. */
  dataVersion: number;
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
