import type BetterSqlite3 from 'better-sqlite3';
import { likeMatcher } from '../../filter/like.js';
import { datePasses, type DateCheck } from '../data-sources/query/dates.js';
import { numericValue } from '../data-sources/query/values.js';
import { SQLITE_BUDGET_FUNCTION, StatementTimeout } from './statement-budget.js';

/** `iar_like(value, pattern, caseInsensitive)`: src/filter/like.ts's `$like`/`$iLike` test, 1 or 0. */
export const SQLITE_LIKE_FUNCTION = 'iar_like';

/**
 * `iar_number(value)`: the number numericValue reads in a string (its decimal syntax, finite; what `$filters`
 * compares as a number), else NULL (also for anything but a string).
 */
export const SQLITE_NUMBER_FUNCTION = 'iar_number';

/**
 * `iar_date_checks(value, time, checks)`: dates.ts `datePasses` of a number or string (`time` 1: the operands are
 * times of day; `checks`: the JSON of its DateCheck list), 1 or 0. One call per entry for a whole date condition:
 * the value is read once.
 */
export const SQLITE_DATE_FUNCTION = 'iar_date_checks';

/**
 * `iar_lower(text)`: JS's `toLowerCase()` of a text (NULL for anything else), for the `$filters` operands whose
 * case folding SQLite's `lower()` (ASCII only) cannot reproduce (data-sources/sql/filters.ts, "caseful").
 */
export const SQLITE_LOWER_FUNCTION = 'iar_lower';

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
 * - SQLITE_LIKE_FUNCTION: like.ts's match, for the values GLOB cannot test (a NUL ends a string for GLOB:
 *   data-sources/sql/sqlite.ts); its matchers are kept per pattern (at most 64).
 * - SQLITE_NUMBER_FUNCTION: numericValue of a string, for `$filters` (data-sources/sql/sqlite-filters.ts).
 * - SQLITE_DATE_FUNCTION: datePasses, for `$filters` date conditions (same file).
 * - SQLITE_LOWER_FUNCTION: `toLowerCase()`, for `$filters` caseful operands (same file).
 */
export function defineSqliteFunctions(db: BetterSqlite3.Database, armed: () => ArmedBudget | null): void {
  db.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => {
    const budget = armed();
    if (budget && Date.now() > budget.deadline) throw new StatementTimeout(budget.timeoutMs);
    return 1;
  });
  const matchers = new Map<string, (value: unknown) => boolean>();
  db.function(SQLITE_LIKE_FUNCTION, { deterministic: true }, (value: unknown, pattern: unknown, caseInsensitive: unknown) => {
    const key = `${caseInsensitive ? 'i' : 's'}${String(pattern)}`;
    let match = matchers.get(key);
    if (!match) {
      if (matchers.size >= 64) matchers.clear();
      matchers.set(key, (match = likeMatcher(String(pattern), Boolean(caseInsensitive))));
    }
    return match(value) ? 1 : 0;
  });
  db.function(SQLITE_NUMBER_FUNCTION, { deterministic: true }, (value: unknown) => {
    if (typeof value !== 'string') return null;
    const n = numericValue(value);
    return n === n ? n : null;
  });
  db.function(SQLITE_LOWER_FUNCTION, { deterministic: true }, (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : null));
  const checkLists = new Map<string, DateCheck[]>();
  db.function(SQLITE_DATE_FUNCTION, { deterministic: true }, (value: unknown, time: unknown, checks: unknown) => {
    if (typeof value !== 'number' && typeof value !== 'string') return 0;
    const key = String(checks);
    let list = checkLists.get(key);
    if (!list) {
      if (checkLists.size >= 64) checkLists.clear();
      checkLists.set(key, (list = JSON.parse(key) as DateCheck[]));
    }
    return datePasses(value, time === 1, list) ? 1 : 0;
  });
}
