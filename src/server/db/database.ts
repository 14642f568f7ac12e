/**
 * The data-access layer's only contact with a database engine. Routes and
 * stores speak this interface, never a driver, so a PostgreSQL adapter can be
 * added beside the SQLite one without touching them.
 *
 * SQL conventions (portable between SQLite and PostgreSQL): `?` placeholders,
 * `RETURNING`, integer ids from `INSERT … RETURNING id`, JSON stored as TEXT,
 * timestamps stored as ISO 8601 TEXT, booleans as 0/1 INTEGER.
 */
export type SqlValue = string | number | bigint | null | Uint8Array;

export interface RunResult {
  changes: number;
}

export interface Queryable {
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  run(sql: string, params?: readonly SqlValue[]): Promise<RunResult>;
}

export interface Database extends Queryable {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when
   * it throws. Other work waits until it ends (no interleaving).
   * On PostgreSQL (postgres.ts) it runs at SERIALIZABLE isolation and `fn`
   * may run again after a serialization failure: keep side effects other than
   * database writes (events, files, HTTP) out of `fn`.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
