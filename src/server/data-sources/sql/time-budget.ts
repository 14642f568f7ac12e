import type { Database, Queryable } from '../../db/database.js';
import { isStatementTimeout } from '../../db/statement-budget.js';
import { HttpError } from '../../http/errors.js';

/**
 * Runs the statements of a data source read under the time budget `timeoutMs` (limits.aggregateTimeoutMs, as the
 * JS evaluator's; docs/data-sources.md, "Time budgets"): past it the running statement is stopped (Database.bounded)
 * and the request answers 422 QUERY_TIMEOUT. The refusal is an HttpError, so no caller mistakes it for a statement
 * the JS evaluator should answer instead.
 */
export async function withTimeBudget<T>(db: Database, timeoutMs: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
  try {
    return await db.bounded(timeoutMs, fn);
  } catch (error) {
    if (!isStatementTimeout(error)) throw error;
    throw new HttpError(422, 'QUERY_TIMEOUT', `query: the database took longer than ${timeoutMs} ms (limits.aggregateTimeoutMs)`, { limit: timeoutMs });
  }
}
