import type { Database, SqlValue } from './database.js';

/**
 * Claiming work that must happen once across instances (design §8).
 *
 * `claimRows` builds one statement that picks up to `limit` rows matching
 * `where` (in `orderBy` order) and updates them with `set`, returning
 * `returning`:
 *
 *   UPDATE t SET … WHERE id IN (SELECT id FROM t WHERE … ORDER BY … LIMIT n [FOR UPDATE SKIP LOCKED]) RETURNING …
 *
 * On SQLite the single writer makes it atomic. On PostgreSQL the inner select
 * locks the rows it picks and skips rows another instance is claiming at that
 * moment, and re-checks `where` on rows changed since its snapshot, so
 * concurrent claimers get disjoint rows without waiting on each other.
 * Call it outside `db.transaction` (autocommitted) for the best throughput.
 */
export interface ClaimSpec {
  table: string;
  /** `SET` list, e.g. `status = 'running', claimed_by = ?`. */
  set: string;
  setParams?: readonly SqlValue[];
  /** Which rows are claimable, e.g. `status = 'queued'`. */
  where: string;
  whereParams?: readonly SqlValue[];
  /** Default `id`. */
  orderBy?: string;
  limit: number;
  /** Columns returned, e.g. `id, payload`. */
  returning: string;
  /** Primary key column (default `id`). */
  key?: string;
}

/** ` FOR UPDATE SKIP LOCKED` on PostgreSQL, nothing on SQLite (for selects in a claim of your own). */
export function skipLocked(db: Partial<Pick<Database, 'dialect'>>): string {
  return db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
}

export function claimSql(db: Pick<Database, 'dialect'>, spec: ClaimSpec): { sql: string; params: SqlValue[] } {
  if (!Number.isInteger(spec.limit) || spec.limit < 1) throw new RangeError('claim limit must be a positive integer');
  const key = spec.key ?? 'id';
  const sql =
    `UPDATE ${spec.table} SET ${spec.set} WHERE ${key} IN ` +
    `(SELECT ${key} FROM ${spec.table} WHERE ${spec.where} ORDER BY ${spec.orderBy ?? key} LIMIT ${spec.limit}${skipLocked(db)}) ` +
    `RETURNING ${spec.returning}`;
  return { sql, params: [...(spec.setParams ?? []), ...(spec.whereParams ?? [])] };
}

export async function claimRows<T = Record<string, unknown>>(db: Pick<Database, 'dialect' | 'all'>, spec: ClaimSpec): Promise<T[]> {
  const { sql, params } = claimSql(db, spec);
  return db.all<T>(sql, params);
}
