import type { Queryable } from '../../db/database.js';
import type { FileRecord } from '../types.js';

/** Data-access layer of `data_source_files` (the bytes live on disk, see ../files.ts). */

interface Row {
  id: number;
  data_source_id: number;
  organization_id: number;
  name: string;
  content_type: string;
  size: number;
  path: string;
  encrypted: number;
  iv: string | null;
  auth_tag: string | null;
  created_at: string;
}

export async function insertFileRow(db: Queryable, init: Omit<FileRecord, 'id'>): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO data_source_files (data_source_id, organization_id, name, content_type, size, path, encrypted, iv, auth_tag, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [init.dataSourceId, init.organizationId, init.name, init.contentType, init.size, init.path, init.encrypted ? 1 : 0, init.iv, init.authTag, init.createdAt],
  );
  return row!.id;
}

export async function findFile(db: Queryable, dataSourceId: number, id: number): Promise<FileRecord | undefined> {
  const row = await db.get<Row>(
    'SELECT id, data_source_id, organization_id, name, content_type, size, path, encrypted, iv, auth_tag, created_at FROM data_source_files WHERE data_source_id = ? AND id = ?',
    [dataSourceId, id],
  );
  return (
    row && {
      id: row.id,
      dataSourceId: row.data_source_id,
      organizationId: row.organization_id,
      name: row.name,
      contentType: row.content_type,
      size: row.size,
      path: row.path,
      encrypted: row.encrypted === 1,
      iv: row.iv,
      authTag: row.auth_tag,
      createdAt: row.created_at,
    }
  );
}

export async function listFilePaths(db: Queryable, dataSourceId: number): Promise<string[]> {
  return (await db.all<{ path: string }>('SELECT path FROM data_source_files WHERE data_source_id = ?', [dataSourceId])).map((r) => r.path);
}
