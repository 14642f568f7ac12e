import type BetterSqlite3 from 'better-sqlite3';
import { SQLITE_BUDGET_FUNCTION, StatementTimeout } from './statement-budget.js';

/** The deadline of the statement running now on a connection (Database.bounded), or null: no budget. */
export interface ArmedBudget {
  deadline: number;
  timeoutMs: number;
}

/**
 * The SQL functions of ours that the statements use, defined on every connection that runs them: the main one
 * (sqlite.ts) and each reader thread's (sqlite-readers/thread.ts). A function used in SQL must be defined here,
 * or a reader thread fails the statement ("no such function") and the read goes to the JS evaluator.
 *
 * - SQLITE_BUDGET_FUNCTION (statement-budget.ts): throws StatementTimeout once `armed()`'s deadline has passed,
 *   which aborts the statement (the connection stays usable); returns 1 otherwise.
 */
export function defineSqliteFunctions(db: BetterSqlite3.Database, armed: () => ArmedBudget | null): void {
  db.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => {
    const budget = armed();
    if (budget && Date.now() > budget.deadline) throw new StatementTimeout(budget.timeoutMs);
    return 1;
  });
}
