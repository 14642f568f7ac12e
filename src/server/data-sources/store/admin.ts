import type { Queryable } from '../../db/database.js';
import type { TokenKind } from '../../store/identity.js';

/** Data-access layer for token management and organization settings (studio routes of the data source issue). */

export interface TokenView {
  id: number;
  token: string;
  name: string;
  kind: TokenKind;
  appId: number | null;
  organizationId: number;
  createdAt: string;
}

export async function listAppTokens(db: Queryable, appId: number): Promise<TokenView[]> {
  return db.all<TokenView>(
    `SELECT id, token, name, kind, app_id AS appId, organization_id AS organizationId, created_at AS createdAt
     FROM tokens WHERE app_id = ? AND kind IN ('api', 'client') ORDER BY id`,
    [appId],
  );
}

export async function deleteAppToken(db: Queryable, appId: number, id: number): Promise<boolean> {
  return (await db.run(`DELETE FROM tokens WHERE id = ? AND app_id = ? AND kind IN ('api', 'client')`, [id, appId])).changes > 0;
}

export interface OrganizationView {
  id: number;
  name: string;
  settings: Record<string, unknown>;
}

export async function findOrganization(db: Queryable, id: number): Promise<OrganizationView | undefined> {
  const row = await db.get<{ id: number; name: string; settings: string }>('SELECT id, name, settings FROM organizations WHERE id = ?', [id]);
  return row && { id: row.id, name: row.name, settings: JSON.parse(row.settings) as Record<string, unknown> };
}

export async function saveOrganizationSettings(db: Queryable, id: number, settings: Record<string, unknown>): Promise<void> {
  await db.run('UPDATE organizations SET settings = ? WHERE id = ?', [JSON.stringify(settings), id]);
}
