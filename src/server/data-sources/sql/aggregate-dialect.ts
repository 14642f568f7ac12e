import type { Accumulator } from './aggregate-plan.js';

/**
 * What an aggregation statement needs from a dialect (sqlite-aggregate.ts, postgres-aggregate.ts). Every
 * expression reads the entry `e` (SQLite: `e.data` text; PostgreSQL: `e.doc` jsonb). Column names are
 * lower case (SQLite compares names without case).
 *
 * - `key`: the columns `<p>c` (class: 0 null, 1 number, 2 string, 3 boolean, 4 missing, 5 array or object)
 *   and `<p>v` (the value: SQLite's SQL value, booleans as 1/0; PostgreSQL's jsonb), both grouped on, and
 *   `amb`, true when mingo would not read the plain value (an array on the path: mingo's value is an array).
 *   `missing`: the class of a missing value (0 for a plain `_id`, where mingo's `?? null` merges the two).
 * - `accumulator`: aggregate columns named `<p>_…` (aggregate.ts reads them) and the rows that make the
 *   translation inexact (`amb`, null when none can).
 * - `matchAmbiguous`: a row where sift (the translated `$match`) and mingo could disagree on the path: an
 *   array on it, or a literal dotted key.
 */
export interface AggregateDialect {
  key(segments: readonly string[], prefix: string, missing: 0 | 4): { select: string[]; group: string[]; amb: string };
  accumulator(acc: Exclude<Accumulator, { op: 'count' } | { op: 'times' }>, prefix: string): { select: string[]; amb: string | null };
  matchAmbiguous(segments: readonly string[]): string;
}
