import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { withGrant, type Grant } from './access.js';
import { SCAN_PAGE } from './scan-select.js';
import { findCandidates, scanPage } from './sql/candidates.js';
import type { Cond } from './sql/conditions.js';
import { isDataError, SqlMatchFailed } from './sql-delete.js';
import { entryFromRow } from './store/entries.js';
import type { EntryRecord } from './types.js';

/**
 * The entries a query delete's `where` matches, when the database cannot find them (the translation is not exact,
 * or the delete rule hides columns) and the data source is larger than the entry cache: read by id in pages of
 * SCAN_PAGE inside the delete's transaction (which no other write interleaves), each page matched against what the
 * rule shows and dropped. Only the matches are kept, oldest id first, as the SQL and the in-memory paths give them.
 * `implied` (scan-select.ts `candidatesCond`): the part of the `where` the database tests, so only the entries
 * that meet it are read (through an index of `indexed` when one serves it, sql/candidates.ts); a statement the data makes the database refuse throws SqlMatchFailed.
 * Matching past `timeoutMs` (limits.aggregateTimeoutMs, checked between pages and every 8 entries) is 422
 * QUERY_TIMEOUT: the transaction is rolled back, so a delete holds the write lock no longer than the budget allows
 * (plus one statement).
 */
export async function scanMatches(
  tx: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  grant: Grant,
  test: (entry: EntryRecord) => boolean,
  implied: Cond | null,
  indexed: ReadonlySet<string>,
  timeoutMs: number,
): Promise<{ id: number; data: Record<string, unknown> }[]> {
  const matches: { id: number; data: Record<string, unknown> }[] = [];
  const budget = deleteBudget(timeoutMs);
  const refused = (error: unknown) => (isDataError(error) ? new SqlMatchFailed(error) : error);
  // As the reads under a time budget do (sql/time-budget.ts): JIT would compile every page's condition again.
  if (implied && engine === 'postgres') await tx.run('SET LOCAL jit = off');
  const candidates = implied && (await findCandidates(tx, engine, dataSourceId, implied, indexed).catch((error) => Promise.reject(refused(error))));
  for (let after = 0; ; ) {
    const page = await scanPage(tx, engine, dataSourceId, after, SCAN_PAGE, candidates).catch((error) => Promise.reject(refused(error)));
    const { rows, done } = page;
    after = page.last;
    const entries = rows.map((row) => entryFromRow(dataSourceId, row));
    for (const entry of deleteMatches(entries, withGrant(entries, grant), test, budget)) matches.push({ id: entry.id, data: entry.data });
    if (done) break;
    budget.check();
  }
  return matches;
}

/** A query delete's time budget (limits.aggregateTimeoutMs): `check` throws 422 QUERY_TIMEOUT past it. */
export function deleteBudget(timeoutMs: number): { check(): void } {
  const deadline = Date.now() + timeoutMs;
  return {
    check() {
      if (Date.now() > deadline)
        throw new HttpError(422, 'QUERY_TIMEOUT', `where: matching took longer than ${timeoutMs} ms (limits.aggregateTimeoutMs); nothing was deleted`, {
          limit: timeoutMs,
        });
    },
  };
}

/**
 * The entries whose `visible` form (what the delete rule shows) `test` accepts, oldest first as given, under the
 * budget: checked every 8 entries, as filterEntries checks a select's (one entry can cost a whole pattern match).
 */
export function deleteMatches<T extends EntryRecord>(
  entries: readonly T[],
  visible: readonly EntryRecord[],
  test: (entry: EntryRecord) => boolean,
  budget: { check(): void },
): T[] {
  const matches: T[] = [];
  for (let i = 0; i < entries.length; i++) {
    if ((i & 7) === 7) budget.check();
    if (test(visible[i]!)) matches.push(entries[i]!);
  }
  return matches;
}
