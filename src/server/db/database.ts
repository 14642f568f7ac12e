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

export interface TransactionOptions {
  /**
   * `serializable` (default): the result is that of some serial order; on PostgreSQL `fn` may run again after
   * a serialization failure. `read-committed`: for a transaction that only writes rows it owns, each guarded
   * by a conditional `UPDATE … WHERE` (re-checked by PostgreSQL after waiting on a row lock) and reads no
   * ranges others write: it never fails to serialize, and `fn` runs once. SQLite runs both the same way.
   */
  isolation?: 'serializable' | 'read-committed';
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
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Runs `fn` in one transaction that holds the exclusive lock named `key` until it ends: transactions taking
   * the same key (on any instance) run one after the other, each seeing what the previous one committed. For
   * a read-then-write that many requests make at once on the same data (a count checked before an insert):
   * they queue instead of failing to serialize and retrying. Reads of data written without this key see only
   * what was committed before each statement (on PostgreSQL: READ COMMITTED with `pg_advisory_xact_lock`;
   * on SQLite the single writer serializes every transaction anyway). `fn` runs once.
   */
  lockedTransaction<T>(key: string, fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
