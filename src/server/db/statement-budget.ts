/**
 * The time budget of a database read (Database.bounded, docs/data-sources.md "Time budgets"): what a statement
 * past it throws on either engine, and the term SQLite statements carry so that a running scan can be stopped.
 */

/** Thrown by a statement of `Database.bounded` still running (or not yet started) when its budget is spent. */
export class StatementTimeout extends Error {
  readonly code = 'STATEMENT_TIMEOUT';
  constructor(readonly timeoutMs: number) {
    super(`The statement took longer than its budget of ${timeoutMs} ms`);
  }
}

export const isStatementTimeout = (error: unknown): error is StatementTimeout =>
  error instanceof StatementTimeout || (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'STATEMENT_TIMEOUT');

/** PostgreSQL's SQLSTATE of a statement cancelled by `statement_timeout` (query_canceled). */
export const PG_QUERY_CANCELED = '57014';

/**
 * SQLite has no interrupt in better-sqlite3 (12.x exposes neither `sqlite3_interrupt` nor a progress handler),
 * but a scalar function of ours runs inside the statement: this one throws StatementTimeout once the armed
 * budget is spent, which aborts the statement (the connection stays usable). db/sqlite.ts defines it; a bare
 * better-sqlite3 connection running our statements (benchmarks) must define it too (returning 1).
 */
export const SQLITE_BUDGET_FUNCTION = 'iar_budget';

/**
 * The term SQLite scans of entries carry (sql/sqlite.ts), its `?` bound to budgetSalt(): the function is called
 * for about one visited row in 8, those whose id the multiply-shift hash `((id · salt) mod 2^32) >> 29` sends to
 * 0. A JS call on every row would cost about as much as reading a small row, `random()` costs most of that too,
 * and a fixed choice by id could be dodged by entries laid out on purpose (ids are global); with a multiplier
 * drawn per statement, no layout of ids avoids the checks. The term reads only `id`, which every index holds,
 * so SQLite tests it first, before the terms that need the row (where.c codes the terms an index covers
 * first). Never false. `id` below 2^32 keeps the product below 2^63 (SQLite would make a larger one a REAL).
 */
export const sqliteBudgetCheck = (id: string) => `((((${id} * ?) & 4294967295) >> 29) <> 0 OR ${SQLITE_BUDGET_FUNCTION}(${id}))`;

/** A fresh multiplier for sqliteBudgetCheck: odd, below 2^31. */
export const budgetSalt = () => 2 * Math.floor(Math.random() * 2 ** 30) + 1;
