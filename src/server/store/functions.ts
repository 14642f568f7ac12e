import type { Queryable } from '../db/database.js';

export interface CustomFunctionRecord {
  id: number;
  appId: number;
  package: string;
  name: string;
  description: string;
  code: string;
  environment: 'server' | 'client' | 'any';
  createdAt: string;
  updatedAt: string;
}

/**
 * Catalog ids of stored functions are their row id plus this, so they never collide with the built-ins'
 * (1, 2, … in src/functions/catalog.ts, fewer than 1000) nor with functions registered on a device (negative).
 */
export const CUSTOM_FUNCTION_ID_BASE = 1000;

/** The id `GET tasks/functions` lists for a stored function. */
export const catalogId = (f: CustomFunctionRecord): number => CUSTOM_FUNCTION_ID_BASE + f.id;

const COLUMNS = `id, app_id AS "appId", package, name, description, code, environment, created_at AS "createdAt", updated_at AS "updatedAt"`;

/** Custom functions of an app, oldest first (the server host passes them to runPipeline as customFunctions). */
export async function listCustomFunctions(db: Queryable, appId: number): Promise<CustomFunctionRecord[]> {
  return db.all<CustomFunctionRecord>(`SELECT ${COLUMNS} FROM custom_functions WHERE app_id = ? ORDER BY id`, [appId]);
}

export async function findCustomFunction(db: Queryable, appId: number, pkg: string): Promise<CustomFunctionRecord | undefined> {
  return db.get<CustomFunctionRecord>(`SELECT ${COLUMNS} FROM custom_functions WHERE app_id = ? AND package = ?`, [appId, pkg]);
}

export async function insertCustomFunction(
  db: Queryable,
  init: { appId: number; package: string; name: string; description: string; code: string; environment: string; now: string },
): Promise<CustomFunctionRecord> {
  const row = await db.get<{ id: number }>(
    'INSERT INTO custom_functions (app_id, package, name, description, code, environment, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id',
    [init.appId, init.package, init.name, init.description, init.code, init.environment, init.now, init.now],
  );
  return (await db.get<CustomFunctionRecord>(`SELECT ${COLUMNS} FROM custom_functions WHERE id = ?`, [row!.id]))!;
}
