/** SQL of app screens (`pages`): a JavaScript asset with a working and a published version. */
import type { Queryable } from '../db/database.js';

export interface PageRow {
  id: number;
  appId: number;
  name: string;
  script: string;
  publishedScript: string | null;
  publishedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

const COLUMNS = `id, app_id AS appId, name, script, published_script AS publishedScript, published_at AS publishedAt,
  created_at AS createdAt, updated_at AS updatedAt`;

export async function listPages(db: Queryable, appId: number): Promise<PageRow[]> {
  return db.all<PageRow>(`SELECT ${COLUMNS} FROM pages WHERE app_id = ? ORDER BY id`, [appId]);
}

export async function getPage(db: Queryable, appId: number, id: number): Promise<PageRow | undefined> {
  return db.get<PageRow>(`SELECT ${COLUMNS} FROM pages WHERE app_id = ? AND id = ?`, [appId, id]);
}

export async function insertPage(db: Queryable, init: { appId: number; name: string; script: string; now: string }): Promise<number> {
  const row = await db.get<{ id: number }>('INSERT INTO pages (app_id, name, script, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id', [
    init.appId,
    init.name,
    init.script,
    init.now,
    init.now,
  ]);
  return row!.id;
}

export async function updatePage(db: Queryable, id: number, patch: { name: string; script: string; now: string }): Promise<void> {
  await db.run('UPDATE pages SET name = ?, script = ?, updated_at = ? WHERE id = ?', [patch.name, patch.script, patch.now, id]);
}

export async function publishPage(db: Queryable, id: number, publish: boolean, now: string): Promise<void> {
  if (publish) await db.run('UPDATE pages SET published_script = script, published_at = ?, updated_at = ? WHERE id = ?', [now, now, id]);
  else await db.run('UPDATE pages SET published_script = NULL, published_at = NULL, updated_at = ? WHERE id = ?', [now, id]);
}

export async function deletePage(db: Queryable, id: number): Promise<void> {
  await db.run('DELETE FROM pages WHERE id = ?', [id]);
}
