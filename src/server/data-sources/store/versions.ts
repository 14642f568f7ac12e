import type { Queryable } from '../../db/database.js';
import type { VersionRecord } from '../types.js';
import { pruneChanges } from './changes.js';

/**
 * Data-access layer of `data_source_versions`. A version stands for the entries at one `data_version` and is
 * rebuilt from the current entries and the changes after it (changes.ts); versions taken before migration 0010
 * have a snapshot blob in `data_source_snapshots` instead (`dataVersion` null).
 */

interface Row {
  id: number;
  data_source_id: number;
  action: string;
  columns: string;
  entry_count: number;
  snapshot_key: string;
  user_id: number | null;
  user_name: string;
  page_id: number | null;
  data_version: number | null;
  created_at: string;
  updated_at: string;
}

const SELECT = `SELECT id, data_source_id, action, columns, entry_count, snapshot_key, user_id, user_name, page_id, data_version, created_at, updated_at
  FROM data_source_versions`;

/** A stored version and, for those rebuilt from changes, the `data_version` it stands for. */
export type StoredVersion = VersionRecord & { dataVersion: number | null };

function fromRow(row: Row): StoredVersion {
  return {
    dataVersion: row.data_version,
    id: row.id,
    dataSourceId: row.data_source_id,
    pageId: row.page_id,
    userId: row.user_id,
    user: { id: row.user_id, firstName: row.user_name, lastName: '', fullName: row.user_name },
    data: {
      action: row.action,
      columns: JSON.parse(row.columns) as string[],
      entries: { count: row.entry_count, key: row.snapshot_key },
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertVersion(
  db: Queryable,
  init: {
    dataSourceId: number;
    action: string;
    columns: string[];
    count: number;
    key: string;
    /** The `data_version` of the entries this version stands for. */
    dataVersion: number;
    userId: number | null;
    userName: string;
    now: string;
  },
): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO data_source_versions (data_source_id, action, columns, entry_count, snapshot_key, user_id, user_name, data_version, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [init.dataSourceId, init.action, JSON.stringify(init.columns), init.count, init.key, init.userId, init.userName, init.dataVersion, init.now, init.now],
  );
  return row!.id;
}

/** Newest first. */
export async function listVersions(db: Queryable, dataSourceId: number): Promise<VersionRecord[]> {
  return (await db.all<Row>(`${SELECT} WHERE data_source_id = ? ORDER BY id DESC`, [dataSourceId])).map((row) => {
    const { dataVersion: _, ...version } = fromRow(row);
    return version;
  });
}

export async function findVersion(db: Queryable, dataSourceId: number, id: number): Promise<StoredVersion | undefined> {
  const row = await db.get<Row>(`${SELECT} WHERE data_source_id = ? AND id = ?`, [dataSourceId, id]);
  return row && fromRow(row);
}

export async function readSnapshot(db: Queryable, key: string): Promise<string | undefined> {
  return (await db.get<{ data: string }>('SELECT data FROM data_source_snapshots WHERE key = ?', [key]))?.data;
}

/** Drops the versions (and their snapshots, and the changes only they needed) beyond the newest `keep`. */
export async function pruneVersions(db: Queryable, dataSourceId: number, keep: number): Promise<void> {
  const old = await db.all<{ id: number; snapshot_key: string }>(
    'SELECT id, snapshot_key FROM data_source_versions WHERE data_source_id = ? ORDER BY id DESC LIMIT -1 OFFSET ?',
    [dataSourceId, keep],
  );
  for (const row of old) {
    await db.run('DELETE FROM data_source_snapshots WHERE key = ?', [row.snapshot_key]);
    await db.run('DELETE FROM data_source_versions WHERE id = ?', [row.id]);
  }
  await pruneChanges(db, dataSourceId);
}
