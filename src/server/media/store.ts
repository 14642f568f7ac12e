import type { Queryable } from '../db/database.js';

/** Data-access layer of `media_folders` and `media_files` (the bytes live on disk, see data-sources/files.ts). */

export interface MediaFolderRecord {
  id: number;
  organizationId: number;
  appId: number | null;
  parentId: number | null;
  name: string;
  createdAt: string;
  updatedAt: string;
}

export interface MediaFileRecord {
  id: number;
  organizationId: number;
  appId: number | null;
  folderId: number | null;
  userId: number | null;
  name: string;
  contentType: string;
  size: number;
  path: string;
  encrypted: boolean;
  iv: string | null;
  authTag: string | null;
  createdAt: string;
  updatedAt: string;
}

const FOLDER = `SELECT id, organization_id AS organizationId, app_id AS appId, parent_id AS parentId, name,
  created_at AS createdAt, updated_at AS updatedAt FROM media_folders`;
const FILE = `SELECT id, organization_id AS organizationId, app_id AS appId, folder_id AS folderId, user_id AS userId, name,
  content_type AS contentType, size, path, encrypted, iv, auth_tag AS authTag, created_at AS createdAt, updated_at AS updatedAt FROM media_files`;

const toFile = (row: Omit<MediaFileRecord, 'encrypted'> & { encrypted: number | boolean }): MediaFileRecord => ({
  ...row,
  size: Number(row.size),
  encrypted: row.encrypted === 1 || row.encrypted === true,
});

/** Where a listing looks: the children of a folder, or the root (no folder) of an app or of the organization. */
export type MediaPlace = { folderId: number } | { organizationId: number; appId: number | null };

function placeWhere(place: MediaPlace, column: 'parent_id' | 'folder_id'): [string, (number | null)[]] {
  if ('folderId' in place) return [`${column} = ?`, [place.folderId]];
  return place.appId === null
    ? [`organization_id = ? AND app_id IS NULL AND ${column} IS NULL`, [place.organizationId]]
    : [`organization_id = ? AND app_id = ? AND ${column} IS NULL`, [place.organizationId, place.appId]];
}

export async function listFolders(db: Queryable, place: MediaPlace): Promise<MediaFolderRecord[]> {
  const [where, params] = placeWhere(place, 'parent_id');
  return db.all<MediaFolderRecord>(`${FOLDER} WHERE ${where} ORDER BY name, id`, params);
}

export async function listFiles(db: Queryable, place: MediaPlace): Promise<MediaFileRecord[]> {
  const [where, params] = placeWhere(place, 'folder_id');
  return (await db.all<Parameters<typeof toFile>[0]>(`${FILE} WHERE ${where} ORDER BY name, id`, params)).map(toFile);
}

export async function findFolder(db: Queryable, id: number): Promise<MediaFolderRecord | undefined> {
  return db.get<MediaFolderRecord>(`${FOLDER} WHERE id = ?`, [id]);
}

export async function findMediaFile(db: Queryable, id: number): Promise<MediaFileRecord | undefined> {
  const row = await db.get<Parameters<typeof toFile>[0]>(`${FILE} WHERE id = ?`, [id]);
  return row && toFile(row);
}

export async function insertFolder(db: Queryable, init: Omit<MediaFolderRecord, 'id' | 'updatedAt'>): Promise<MediaFolderRecord> {
  const row = await db.get<{ id: number }>(
    'INSERT INTO media_folders (organization_id, app_id, parent_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id',
    [init.organizationId, init.appId, init.parentId, init.name, init.createdAt, init.createdAt],
  );
  return { ...init, id: row!.id, updatedAt: init.createdAt };
}

export async function insertMediaFile(db: Queryable, init: Omit<MediaFileRecord, 'id' | 'updatedAt'>): Promise<MediaFileRecord> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO media_files (organization_id, app_id, folder_id, user_id, name, content_type, size, path, encrypted, iv, auth_tag, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [
      init.organizationId,
      init.appId,
      init.folderId,
      init.userId,
      init.name,
      init.contentType,
      init.size,
      init.path,
      init.encrypted ? 1 : 0,
      init.iv,
      init.authTag,
      init.createdAt,
      init.createdAt,
    ],
  );
  return { ...init, id: row!.id, updatedAt: init.createdAt };
}

export async function deleteMediaFileRow(db: Queryable, id: number): Promise<boolean> {
  return (await db.run('DELETE FROM media_files WHERE id = ?', [id])).changes > 0;
}

/** The folder and every folder below it (ids, the folder first). */
export async function folderTree(db: Queryable, id: number, lock: FolderLock = ''): Promise<number[]> {
  const ids = [id];
  for (let i = 0; i < ids.length; i++) {
    const children = await db.all<{ id: number }>(`SELECT id FROM media_folders WHERE parent_id = ?${lock}`, [ids[i]!]);
    for (const child of children) ids.push(child.id);
  }
  return ids;
}

/**
 * Row locks of a folder held until the transaction ends (PostgreSQL; SQLite runs one transaction at a time): what
 * goes into a folder holds it `FOR SHARE`, a delete takes its tree `FOR UPDATE` before it removes anything. So an
 * upload or a new sub-folder either commits before the delete reads the tree (and is removed with it) or finds
 * the folder gone; neither ends in a foreign-key error.
 */
export type FolderLock = '' | ' FOR SHARE' | ' FOR UPDATE';

export const folderLock = (dialect: 'sqlite' | 'postgres', mode: 'share' | 'update'): FolderLock =>
  dialect !== 'postgres' ? '' : mode === 'share' ? ' FOR SHARE' : ' FOR UPDATE';

/** Whether the folder still exists, read again in a transaction and locked as `lock` says. */
export async function folderExists(db: Queryable, id: number, lock: FolderLock): Promise<boolean> {
  return (await db.get(`SELECT id FROM media_folders WHERE id = ?${lock}`, [id])) !== undefined;
}

/** Removes the folders (ids from `folderTree`) and the files in them; returns the removed files' storage paths. */
export async function deleteFolders(db: Queryable, ids: readonly number[]): Promise<string[]> {
  const paths: string[] = [];
  for (const id of ids) {
    for (const row of await db.all<{ path: string }>('SELECT path FROM media_files WHERE folder_id = ?', [id])) paths.push(row.path);
    await db.run('DELETE FROM media_files WHERE folder_id = ?', [id]);
  }
  // Children first: no folder is removed while another still names it as its parent.
  for (const id of [...ids].reverse()) await db.run('DELETE FROM media_folders WHERE id = ?', [id]);
  return paths;
}
