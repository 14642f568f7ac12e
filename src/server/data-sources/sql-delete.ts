import type { Queryable } from '../db/database.js';
import { renderCond } from './sql/dialect.js';
import { sql } from './sql/fragment.js';
import { dialectOf } from './sql/select.js';
import { translateWhere } from './sql/where.js';

/**
 * Query deletes (`type: 'delete'`) found by the database (docs/sql.md): the entries a `where` matches, read by one
 * statement inside the delete's transaction, so a data source is never loaded whole to delete a few entries.
 */

/** A statement the database refused for the data (e.g. "\u0000" in a string is not valid jsonb): the JS evaluator decides. */
export class SqlMatchFailed extends Error {
  constructor(cause: unknown) {
    super('The database could not evaluate the where', { cause });
  }
}

/** PostgreSQL's data exceptions (SQLSTATE class 22, e.g. 22P05 for "\u0000" in jsonb); SQLite's JSON errors. */
export function isDataError(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code)) return true;
  return code === 'SQLITE_ERROR' && typeof message === 'string' && /json/i.test(message);
}

/** Whether the database can match `where` with exactly the JS evaluator's answer (sql/where.ts). */
export const deleteTranslates = (where: unknown): boolean => translateWhere(where) !== null;

/** The id and data of every entry `where` matches, or null when the translation is not exact. */
export async function entriesMatching(
  tx: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  where: unknown,
): Promise<{ id: number; data: Record<string, unknown> }[] | null> {
  const cond = translateWhere(where);
  if (!cond) return null;
  const dialect = dialectOf(engine);
  // Oldest id first, as the JS path matches them: the delete log records (and the triggers they fire) keep that order.
  const statement = sql`SELECT e.id, e.data FROM ${dialect.entries(dataSourceId, null)} WHERE ${renderCond(dialect, cond)} ORDER BY e.id`;
  let rows: { id: number; data: string }[];
  try {
    rows = await tx.all<{ id: number; data: string }>(statement.text, statement.params);
  } catch (error) {
    // Only what the data caused; a serialization failure, a timeout or a lost connection stays what it is.
    throw isDataError(error) ? new SqlMatchFailed(error) : error;
  }
  return rows.map((row) => ({ id: Number(row.id), data: JSON.parse(row.data) as Record<string, unknown> }));
}
