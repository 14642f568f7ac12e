import { literal } from './fragment.js';
import type { SortKey } from './keys.js';

/**
 * keys.ts's sort key on SQLite (JSON1 over the `data` text); `data` is the column as the query names it
 * (`e.data`, or `data` in an index definition: SQLite matches the two once the subquery is flattened).
 */
const jsonPath = (segments: readonly string[]) => literal('$' + segments.map((s) => `."${s}"`).join('')).text;

/**
 * A string that may be numeric for order.ts (a superset of its decimal syntax: after removing `e-`/`e+`,
 * leading spaces and signs and trailing spaces, only digits, `.`, `e`, `E` are left and a digit is among
 * them), or that holds characters from U+E000 up or NUL.
 */
function ambiguousText(v: string): string {
  const replaced = `replace(replace(replace(replace(${v}, 'e-', 'e'), 'e+', 'e'), 'E-', 'e'), 'E+', 'e')`;
  const core = `rtrim(ltrim(${replaced}, char(32, 9, 10, 13, 43, 45)), char(32, 9, 10, 13))`;
  return `(instr(${v}, char(0)) > 0 OR ${v} GLOB '*[\u{E000}-\u{10FFFF}]*' OR (${core} GLOB '*[0-9]*' AND ${core} NOT GLOB '*[^0-9.eE]*'))`;
}

export function sqliteSortKey(segments: readonly string[], data: string): SortKey {
  const path = jsonPath(segments);
  const t = `json_type(${data}, ${path})`;
  const v = `json_extract(${data}, ${path})`;
  const other: string[] = segments.slice(0, -1).map((_, i) => `json_type(${data}, ${jsonPath(segments.slice(0, i + 1))}) = 'array'`);
  if (segments.length > 1) other.push(`json_type(${data}, ${jsonPath([segments.join('.')])}) IS NOT NULL`);
  const leaf = `CASE ${t} WHEN 'integer' THEN 0 WHEN 'real' THEN 0 WHEN 'text' THEN (CASE WHEN ${ambiguousText(v)} THEN 3 ELSE 1 END) WHEN 'true' THEN 1 WHEN 'false' THEN 1 WHEN 'array' THEN 3 WHEN 'object' THEN 3 ELSE 2 END`;
  return {
    rank: other.length > 0 ? `(CASE WHEN ${other.join(' OR ')} THEN 3 ELSE ${leaf} END)` : `(${leaf})`,
    num: `(CASE WHEN ${t} IN ('integer', 'real') THEN ${v} END)`,
    txt: `(CASE ${t} WHEN 'text' THEN ${v} WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END)`,
  };
}
