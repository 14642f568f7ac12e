import type { Queryable } from '../../db/database.js';
import type { DataSourceRecord } from '../types.js';
import { stampChanges } from './changes.js';

/** Data-access layer of the `data_sources` table. */

const COLUMNS = `id, name, type, organization_id, app_id, public, encrypted, columns, hooks, access_rules, definition,
  app_capabilities, data_version, created_at, updated_at`;

interface Row {
  id: number;
  name: string;
  type: string | null;
  organization_id: number;
  app_id: number | null;
  public: number;
  encrypted: number;
  columns: string | null;
  hooks: string;
  access_rules: string;
  definition: string;
  app_capabilities: string | null;
  data_version: number;
  created_at: string;
  updated_at: string;
}

function fromRow(row: Row): DataSourceRecord {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    organizationId: row.organization_id,
    appId: row.app_id,
    public: row.public === 1,
    encrypted: row.encrypted === 1,
    columns: row.columns === null ? null : (JSON.parse(row.columns) as string[]),
    hooks: JSON.parse(row.hooks) as DataSourceRecord['hooks'],
    accessRules: JSON.parse(row.access_rules) as DataSourceRecord['accessRules'],
    definition: JSON.parse(row.definition) as Record<string, unknown>,
    appCapabilities: row.app_capabilities === null ? null : JSON.parse(row.app_capabilities),
    dataVersion: row.data_version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function findDataSourceById(db: Queryable, id: number): Promise<DataSourceRecord | undefined> {
  const row = await db.get<Row>(`SELECT ${COLUMNS} FROM data_sources WHERE id = ?`, [id]);
  return row && fromRow(row);
}

export async function findDataSourcesByName(db: Queryable, name: string, organizationId?: number): Promise<DataSourceRecord[]> {
  const rows =
    organizationId === undefined
      ? await db.all<Row>(`SELECT ${COLUMNS} FROM data_sources WHERE name = ? ORDER BY id`, [name])
      : await db.all<Row>(`SELECT ${COLUMNS} FROM data_sources WHERE name = ? AND organization_id = ?`, [name, organizationId]);
  return rows.map(fromRow);
}

export async function listDataSources(db: Queryable, filter: { appId: number } | { organizationId: number }): Promise<DataSourceRecord[]> {
  const rows =
    'appId' in filter
      ? await db.all<Row>(`SELECT ${COLUMNS} FROM data_sources WHERE app_id = ? ORDER BY id`, [filter.appId])
      : await db.all<Row>(`SELECT ${COLUMNS} FROM data_sources WHERE organization_id = ? ORDER BY id`, [filter.organizationId]);
  return rows.map(fromRow);
}

export async function nameTaken(db: Queryable, organizationId: number, name: string, exceptId?: number): Promise<boolean> {
  const row = await db.get<{ id: number }>('SELECT id FROM data_sources WHERE organization_id = ? AND name = ?', [organizationId, name]);
  return row !== undefined && row.id !== exceptId;
}

export async function insertDataSource(
  db: Queryable,
  init: { name: string; type: string | null; organizationId: number; appId: number | null; now: string },
): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO data_sources (name, type, organization_id, app_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
    [init.name, init.type, init.organizationId, init.appId, init.now, init.now],
  );
  return row!.id;
}

export interface DataSourceChanges {
  name?: string;
  type?: string | null;
  columns?: string[] | null;
  public?: boolean;
  hooks?: unknown[];
  accessRules?: unknown[];
  definition?: Record<string, unknown>;
}

export async function updateDataSourceRow(db: Queryable, id: number, changes: DataSourceChanges, now: string): Promise<void> {
  const sets: string[] = [];
  const params: (string | number | null)[] = [];
  const add = (column: string, value: string | number | null) => {
    sets.push(`${column} = ?`);
    params.push(value);
  };
  if (changes.name !== undefined) add('name', changes.name);
  if (changes.type !== undefined) add('type', changes.type);
  if (changes.columns !== undefined) add('columns', changes.columns === null ? null : JSON.stringify(changes.columns));
  if (changes.public !== undefined) add('public', changes.public ? 1 : 0);
  if (changes.hooks !== undefined) add('hooks', JSON.stringify(changes.hooks));
  if (changes.accessRules !== undefined) add('access_rules', JSON.stringify(changes.accessRules));
  if (changes.definition !== undefined) add('definition', JSON.stringify(changes.definition));
  add('updated_at', now);
  await db.run(`UPDATE data_sources SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
}

export async function deleteDataSourceRow(db: Queryable, id: number): Promise<void> {
  await db.run('DELETE FROM data_source_entries WHERE data_source_id = ?', [id]);
  await db.run('DELETE FROM data_source_versions WHERE data_source_id = ?', [id]);
  await db.run('DELETE FROM data_source_files WHERE data_source_id = ?', [id]);
  await db.run('DELETE FROM data_source_snapshots WHERE key LIKE ?', [`data-sources/${id}/%`]);
  await db.run('DELETE FROM data_sources WHERE id = ?', [id]);
}

/** The version counter of the entries (caches are keyed by it). */
export async function dataVersion(db: Queryable, id: number): Promise<number | undefined> {
  return (await db.get<{ data_version: number }>('SELECT data_version FROM data_sources WHERE id = ?', [id]))?.data_version;
}

/** Marks the entries as changed and stamps the write's undo records (changes.ts); returns the new version. */
export async function bumpDataVersion(db: Queryable, id: number): Promise<number> {
  const row = await db.get<{ data_version: number }>('UPDATE data_sources SET data_version = data_version + 1 WHERE id = ? RETURNING data_version', [id]);
  await stampChanges(db, id, row!.data_version);
  return row!.data_version;
}
