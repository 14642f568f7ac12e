import type { Accumulator } from './aggregate-plan.js';

/**
 * What an aggregation statement needs from a dialect (sqlite-aggregate.ts, postgres-aggregate.ts).
 * aggregate.ts builds `SELECT <aggregates> FROM (SELECT <row columns> FROM entries e WHERE … <fence>) r
 * GROUP BY …`: per-row values are computed once in the inner select (`col(expr)` registers one, over `e`,
 * and returns its name as `r.<name>`), the aggregates read them. Aggregate column names are lower case
 * (SQLite compares names without case).
 *
 * - `key`: columns `<p>v` (the grouped value as JSON: SQLite's JSON text, PostgreSQL's jsonb) and `<p>m`
 *   (1 when missing), the GROUP BY expressions, and `amb` (over `r`): true when mingo would not read the
 *   plain value: an array or object (mingo groups those by deep equality, key order aside), or an array on the
 *   path (mingo's value is then an array). `missingIsNull`: mingo's `?? null` merges missing into null (a plain
 *   `_id`), not in an object `_id`.
 * - `accumulator`: aggregate columns `<p>_…` (aggregate.ts reads them) and the rows that make the translation
 *   inexact (`amb` over `r`, null when none can).
 * - `matchAmbiguous` (over `e`): a row where sift (the translated `$match`) and mingo could disagree on the
 *   path: an array on it, or a literal dotted key.
 * - `json`: a `<p>v` value as returned by the driver, parsed.
 */
export type Col = (expr: string) => string;

export interface AggregateDialect {
  /** What keeps the inner select from being merged into the aggregate (each row value computed once). */
  fence: string;
  key(segments: readonly string[], prefix: string, missingIsNull: boolean, col: Col): { select: string[]; group: string[]; amb: string };
  accumulator(acc: Extract<Accumulator, { segments: string[] }>, prefix: string, col: Col): { select: string[]; amb: string | null };
  matchAmbiguous(segments: readonly string[]): string;
  json(value: unknown): unknown;
}
