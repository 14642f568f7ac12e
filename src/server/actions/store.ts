/** SQL of the `actions` table (working copy, published snapshot, schedule state). */
import type { Queryable } from '../db/database.js';
import type { Action, ActionDefinition } from '../../contract/actions.js';

export interface ActionRow {
  id: number;
  appId: number;
  organizationId: number;
  name: string;
  active: boolean;
  working: ActionDefinition;
  published: ActionDefinition | null;
  publishedAt: string | null;
  lastRunAt: string | null;
  nextRunAt: string | null;
  lastScheduledAt: string | null;
  createdAt: string;
  updatedAt: string;
}

const COLUMNS = `id, app_id AS appId, organization_id AS organizationId, name, active, working, published,
  published_at AS publishedAt, last_run_at AS lastRunAt, next_run_at AS nextRunAt,
  last_scheduled_at AS lastScheduledAt, created_at AS createdAt, updated_at AS updatedAt`;

type RawRow = Omit<ActionRow, 'active' | 'working' | 'published'> & { active: number; working: string; published: string | null };

const toRow = (raw: RawRow | undefined): ActionRow | undefined =>
  raw && {
    ...raw,
    active: raw.active === 1,
    working: JSON.parse(raw.working) as ActionDefinition,
    published: raw.published === null ? null : (JSON.parse(raw.published) as ActionDefinition),
  };

/** The API shape: the copy of `which` (working by default) plus the action's own fields. */
export function toAction(row: ActionRow, which: 'working' | 'published' = 'working'): Action {
  const definition = which === 'published' && row.published ? row.published : row.working;
  return {
    id: row.id,
    appId: row.appId,
    name: row.name,
    active: row.active,
    ...definition,
    published: row.published !== null,
    publishedAt: row.publishedAt,
    lastRunAt: row.lastRunAt,
    nextRunAt: row.active && row.published ? row.nextRunAt : null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export async function listActions(db: Queryable, appId: number): Promise<ActionRow[]> {
  const rows = await db.all<RawRow>(`SELECT ${COLUMNS} FROM actions WHERE app_id = ? ORDER BY id`, [appId]);
  return rows.map((r) => toRow(r)!);
}

/**
 * Actions of an app (or of every app of an organization) that are active and published, as stored: each with its
 * `published` text, and the row parsed only when asked for (log triggers read them on every entry written and
 * parse only the definitions they have not seen).
 */
export async function listLiveActionTexts(
  db: Queryable,
  scope: { appId?: number | null; organizationId?: number | null },
): Promise<{ published: string; row: () => ActionRow }[]> {
  const rows =
    scope.appId != null
      ? await db.all<RawRow>(`SELECT ${COLUMNS} FROM actions WHERE app_id = ? AND active = 1 AND published IS NOT NULL`, [scope.appId])
      : await db.all<RawRow>(`SELECT ${COLUMNS} FROM actions WHERE organization_id = ? AND active = 1 AND published IS NOT NULL`, [scope.organizationId ?? -1]);
  return rows.map((raw) => ({ published: raw.published!, row: () => toRow(raw)! }));
}

export async function getActionById(db: Queryable, appId: number, id: number): Promise<ActionRow | undefined> {
  return toRow(await db.get<RawRow>(`SELECT ${COLUMNS} FROM actions WHERE app_id = ? AND id = ?`, [appId, id]));
}

/**
 * Which of these action ids the app has (nothing of the actions is read: a device upload names them per record).
 * One statement per id, the same text for every upload (a list of placeholders would be a new statement per length).
 */
export async function existingActionIds(db: Queryable, appId: number, ids: readonly number[]): Promise<Set<number>> {
  const found = new Set<number>();
  for (const id of ids) if (await db.get('SELECT id FROM actions WHERE app_id = ? AND id = ?', [appId, id])) found.add(id);
  return found;
}

export async function getActionByName(db: Queryable, appId: number, name: string): Promise<ActionRow | undefined> {
  return toRow(await db.get<RawRow>(`SELECT ${COLUMNS} FROM actions WHERE app_id = ? AND name = ?`, [appId, name]));
}

/** By id when the text is all digits (names never are), else by name. */
export async function findAction(db: Queryable, appId: number, idOrName: string): Promise<ActionRow | undefined> {
  if (!/^\d+$/.test(idOrName)) return getActionByName(db, appId, idOrName);
  const id = Number(idOrName);
  return Number.isSafeInteger(id) ? getActionById(db, appId, id) : undefined;
}

export async function insertAction(
  db: Queryable,
  init: { appId: number; organizationId: number; name: string; active: boolean; working: ActionDefinition; now: string },
): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO actions (app_id, organization_id, name, active, working, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [init.appId, init.organizationId, init.name, init.active ? 1 : 0, JSON.stringify(init.working), init.now, init.now],
  );
  return row!.id;
}

export async function updateAction(
  db: Queryable,
  id: number,
  patch: { name: string; active: boolean; working: ActionDefinition; nextRunAt: string | null; now: string },
): Promise<void> {
  await db.run('UPDATE actions SET name = ?, active = ?, working = ?, next_run_at = ?, updated_at = ? WHERE id = ?', [
    patch.name,
    patch.active ? 1 : 0,
    JSON.stringify(patch.working),
    patch.nextRunAt,
    patch.now,
    id,
  ]);
}

export async function setPublished(db: Queryable, id: number, snapshot: ActionDefinition | null, nextRunAt: string | null, now: string): Promise<void> {
  await db.run('UPDATE actions SET published = ?, published_at = ?, next_run_at = ?, updated_at = ? WHERE id = ?', [
    snapshot === null ? null : JSON.stringify(snapshot),
    snapshot === null ? null : now,
    nextRunAt,
    now,
    id,
  ]);
}

export async function deleteAction(db: Queryable, id: number): Promise<void> {
  await db.run('DELETE FROM actions WHERE id = ?', [id]);
}

export async function touchLastRun(db: Queryable, id: number, at: string): Promise<void> {
  await db.run('UPDATE actions SET last_run_at = ? WHERE id = ? AND (last_run_at IS NULL OR last_run_at < ?)', [at, id, at]);
}

/** Actions whose next occurrence is due. */
export async function listDueActions(db: Queryable, nowIso: string): Promise<ActionRow[]> {
  const rows = await db.all<RawRow>(
    `SELECT ${COLUMNS} FROM actions WHERE next_run_at IS NOT NULL AND next_run_at <= ? AND active = 1 AND published IS NOT NULL ORDER BY next_run_at`,
    [nowIso],
  );
  return rows.map((r) => toRow(r)!);
}

/**
 * Claims the occurrence `expected` of an action by moving `next_run_at` on:
 * true for exactly one caller even when several schedulers share the database.
 */
export async function claimOccurrence(db: Queryable, id: number, expected: string, scheduledAt: string, next: string | null): Promise<boolean> {
  const { changes } = await db.run(
    'UPDATE actions SET next_run_at = ?, last_scheduled_at = ? WHERE id = ? AND next_run_at = ? AND active = 1 AND published IS NOT NULL',
    [next, scheduledAt, id, expected],
  );
  return changes === 1;
}
