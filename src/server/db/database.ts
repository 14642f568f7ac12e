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

/**
 * The rows of a query as they were when it ran in a transaction, read after the transaction in pages (for an
 * answer too large to hold in memory: docs/data-sources.md, "Streamed answers"). The database keeps them (SQLite:
 * a TEMP table of the connection; PostgreSQL: a `WITH HOLD` cursor, materialized at COMMIT), so later writes do
 * not change them. `close()` frees them; it is also done when (or right after) `next` returns the last rows. When
 * the transaction rolls back they are gone and `next` throws. Each row is an array of the selected columns' values,
 * in the SELECT's order (no object per row: these are many rows).
 */
export interface KeptRows<T extends readonly unknown[]> {
  /** The next rows in the query's order: `count` of them, fewer (or none) at the end. */
  next(count: number): Promise<T[]>;
  /** Frees the rows (idempotent; after it `next` returns none). */
  close(): Promise<void>;
}

/**
 * Like KeptRows, for a query read as one text per row: the rows' texts joined by commas, read after the transaction
 * in pages built by the database (SQLite: `group_concat` over the kept rows; PostgreSQL: the cursor's rows written
 * into one buffer), as UTF-8 bytes, so no row becomes a JS value (docs/data-sources.md, "Streamed answers"). Every
 * page but the first starts with the comma: the pages concatenated are the texts joined by commas.
 */
export interface KeptText {
  /** The texts of the next `count` rows (fewer at the end), or undefined when none is left. */
  next(count: number): Promise<Uint8Array | undefined>;
  /** Frees the rows (idempotent; after it `next` returns undefined). */
  close(): Promise<void>;
}

/**
 * A query kept as texts: `SELECT <columns> <from>` (from `FROM` on: conditions and the order of the answer), each
 * row's text the SQL expression `text`, which reads only the columns named in `columns` (bare column names). SQLite
 * keeps those columns and computes `text` as it builds a page (the copy in the transaction stays small); PostgreSQL's
 * cursor selects `text` itself.
 */
export interface TextQuery {
  columns: string;
  from: string;
  text: string;
  params?: readonly SqlValue[];
}

/** What a transaction's function works with: statements, and queries whose rows outlive the transaction. */
export interface Transaction extends Queryable {
  /** Runs `sql` (a SELECT) now and keeps its rows, to be read after the transaction (see KeptRows). */
  keep<T extends readonly unknown[]>(sql: string, params?: readonly SqlValue[]): Promise<KeptRows<T>>;
  /** Runs `query` now and keeps its rows' texts, to be read after the transaction (see KeptText). */
  keepText(query: TextQuery): Promise<KeptText>;
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
  transaction<T>(fn: (tx: Transaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Runs `fn` in one transaction that holds the exclusive lock named `key` until it ends: transactions taking
   * the same key (on any instance) run one after the other, each seeing what the previous one committed. For
   * a read-then-write that many requests make at once on the same data (a count checked before an insert):
   * they queue instead of failing to serialize and retrying. Reads of data written without this key see only
   * what was committed before each statement (on PostgreSQL: READ COMMITTED with `pg_advisory_xact_lock`;
   * on SQLite the single writer serializes every transaction anyway). `fn` runs once.
   */
  lockedTransaction<T>(key: string, fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs the reads of `fn` under a time budget of `timeoutMs` from now (docs/data-sources.md, "Time budgets"): a
   * statement still running when the budget is spent is stopped and throws StatementTimeout (statement-budget.ts),
   * as does a statement started after it; other requests are unaffected and the connection stays usable.
   * PostgreSQL: one READ ONLY, READ COMMITTED transaction on one pooled connection, `statement_timeout` set to the
   * time left before each statement. SQLite: the budget is checked inside the scans of statements that carry
   * `sqliteBudgetCheck` (work outside them, e.g. sorting what a scan found, is not stopped); on a database file
   * the reads run on reader threads (sqlite-readers/), each in one read transaction, off the main thread. For
   * reads outside a transaction: a transaction's own reads go through its `tx`.
   */
  bounded<T>(timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
