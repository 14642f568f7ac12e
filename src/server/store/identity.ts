import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/database.js';

/**
 * `client`: the token an app screen carries in its HTML (public by nature: runs published actions, uses data
 * sources as their rules allow, analytics, notifications as an app user, device logs); `api`: integrations and
 * servers of one app; `studio`: everything in its organization. What each route accepts: http/token-kinds.ts.
 */
export type TokenKind = 'client' | 'api' | 'studio';

export interface TokenRecord {
  id: number;
  token: string;
  kind: TokenKind;
  name: string;
  organizationId: number;
  appId: number | null;
}

export interface AppRecord {
  id: number;
  name: string;
  organizationId: number;
}

/** A new secret: `iar_client_…`, `iar_api_…` or `iar_studio_…` (the prefix says the kind to whoever reads it). */
export const newToken = (kind: TokenKind) => `iar_${kind}_${randomBytes(24).toString('base64url')}`;

export async function findToken(db: Queryable, token: string): Promise<TokenRecord | undefined> {
  return db.get<TokenRecord>('SELECT id, token, kind, name, organization_id AS organizationId, app_id AS appId FROM tokens WHERE token = ?', [token]);
}

export async function createOrganization(db: Queryable, name: string, now: string): Promise<number> {
  const row = await db.get<{ id: number }>('INSERT INTO organizations (name, created_at) VALUES (?, ?) RETURNING id', [name, now]);
  return row!.id;
}

export async function createApp(db: Queryable, organizationId: number, name: string, now: string): Promise<number> {
  const row = await db.get<{ id: number }>('INSERT INTO apps (organization_id, name, created_at) VALUES (?, ?, ?) RETURNING id', [organizationId, name, now]);
  return row!.id;
}

export async function getApp(db: Queryable, id: number): Promise<AppRecord | undefined> {
  return db.get<AppRecord>('SELECT id, name, organization_id AS organizationId FROM apps WHERE id = ?', [id]);
}

export async function createToken(
  db: Queryable,
  init: { kind: TokenKind; name?: string; organizationId: number; appId: number | null; now: string; token?: string },
): Promise<TokenRecord> {
  const token = init.token ?? newToken(init.kind);
  const row = await db.get<{ id: number }>(
    'INSERT INTO tokens (token, kind, name, organization_id, app_id, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id',
    [token, init.kind, init.name ?? '', init.organizationId, init.appId, init.now],
  );
  return { id: row!.id, token, kind: init.kind, name: init.name ?? '', organizationId: init.organizationId, appId: init.appId };
}

export async function getSetting(db: Queryable, key: string): Promise<string | undefined> {
  return (await db.get<{ value: string }>('SELECT value FROM settings WHERE key = ?', [key]))?.value;
}

export async function setSetting(db: Queryable, key: string, value: string): Promise<void> {
  await db.run('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
}

export async function renameApp(db: Queryable, id: number, name: string): Promise<void> {
  await db.run('UPDATE apps SET name = ? WHERE id = ?', [name, id]);
}
