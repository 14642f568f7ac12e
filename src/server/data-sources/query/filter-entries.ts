import { HttpError } from '../../http/errors.js';
import { asInvalidQuery } from './errors.js';
import type { EntryRecord } from './types.js';

/**
 * The time one query may spend matching in JS (limits.aggregateTimeoutMs): its parent `where`, its joins' `where`s
 * and the reads of their candidates share one deadline, so a query with N joins costs one budget, not N + 1.
 */
export interface Budget {
  timeoutMs: number;
  /** Date.now() past which the query answers 422 QUERY_TIMEOUT (Infinity: no bound). */
  deadline: number;
  /**
   * Of the budget, what the database's attempt spent before it left the query to the JS evaluator (ms; none when
   * it did not try). The 422 names it, so a timeout whose time went to SQL does not read as slow matching alone.
   */
  databaseMs?: number;
}

/** A budget of `timeoutMs` from now (none when undefined). */
export const startBudget = (timeoutMs?: number): Budget =>
  timeoutMs === undefined ? { timeoutMs: Infinity, deadline: Infinity } : { timeoutMs, deadline: Date.now() + timeoutMs };

/**
 * Runs `load` (reading a data set into the entry cache) outside the budget: its deadline moves by the time the load
 * took, since loading is not the query's matching (the parent's own load never counts either).
 */
export async function outsideBudget<T>(budget: Budget, load: () => Promise<T>): Promise<T> {
  const start = Date.now();
  try {
    return await load();
  } finally {
    budget.deadline += Date.now() - start;
  }
}

/**
 * The end of a QUERY_TIMEOUT message: what of the budget `timeoutMs` the database's attempt spent, when that was a
 * tenth of it or more (a query the translation declines at once spends a few ms resolving it: not worth naming).
 */
export const spentInDatabase = (databaseMs: number | undefined, timeoutMs: number) =>
  databaseMs && databaseMs >= timeoutMs / 10 ? `, ${databaseMs} ms of them in the database's attempt before the JS evaluator took the query` : '';

/** The 422 of a query past its budget; `field` names what was matching (`where`, `join.<Name>.where`). */
export const queryTimeout = (budget: Budget, field = 'where') =>
  new HttpError(
    422,
    'QUERY_TIMEOUT',
    `${field}: matching took longer than ${budget.timeoutMs} ms (limits.aggregateTimeoutMs)${spentInDatabase(budget.databaseMs, budget.timeoutMs)}`,
    { limit: budget.timeoutMs },
  );

/**
 * The entries `test` accepts, under `budget` (checked every 8 entries: one entry can cost 100 ms, e.g. a
 * 10,000-value `$in` inside `$elemMatch` against a 100-element array, so every 1,024 left a small data source
 * unbounded): past it 422 `QUERY_TIMEOUT`, so one query cannot hold the process for long.
 */
export function filterEntries(
  entries: readonly EntryRecord[],
  test: (entry: EntryRecord) => boolean,
  budget: Budget = startBudget(),
  field = 'where',
): EntryRecord[] {
  // Operators are checked at compile time; anything still thrown while matching comes from the query.
  return asInvalidQuery(field, () => {
    const out: EntryRecord[] = [];
    for (let i = 0; i < entries.length; i++) {
      if ((i & 7) === 7 && Date.now() > budget.deadline) throw queryTimeout(budget, field);
      const entry = entries[i]!;
      if (test(entry)) out.push(entry);
    }
    return out;
  });
}
