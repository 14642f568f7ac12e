import { literal } from './fragment.js';
import type { SortKey } from './keys.js';

/**
 * keys.ts's sort key on PostgreSQL, over `data::jsonb`. A row whose text holds a `\u` escape is not parsed
 * and has rank 3: jsonb refuses `\u0000` and lone surrogates, and an index expression that fails would make
 * every write of such an entry fail. Numbers are numerics (exact; the shortest decimal forms JS writes keep
 * the order of the doubles); text is compared under COLLATE "C" (UTF-8 bytes).
 */
const DECIMAL = `'^[[:space:]]*[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?[[:space:]]*$'`;

export function postgresSortKey(segments: readonly string[], data: string, parsed = `${data}::jsonb`): SortKey {
  const doc = `(CASE WHEN strpos(${data}, '\\u') = 0 THEN ${parsed} END)`;
  const at = (path: readonly string[]) => `(${doc}${path.map((s) => ` -> ${literal(s).text}`).join('')})`;
  const x = at(segments);
  const t = `jsonb_typeof(${x})`;
  const s = `(${x} #>> '{}')`;
  const other = [`strpos(${data}, '\\u') > 0`, ...segments.slice(0, -1).map((_, i) => `jsonb_typeof(${at(segments.slice(0, i + 1))}) = 'array'`)];
  if (segments.length > 1) other.push(`${at([segments.join('.')])} IS NOT NULL`);
  const text = `(CASE WHEN ${s} ~ ${DECIMAL} OR ${s} ~ '[\u{E000}-\u{10FFFF}]' THEN 3 ELSE 1 END)`;
  return {
    rank: `(CASE WHEN ${other.join(' OR ')} THEN 3 ELSE (CASE ${t} WHEN 'number' THEN 0 WHEN 'string' THEN ${text} WHEN 'boolean' THEN 1 WHEN 'array' THEN 3 WHEN 'object' THEN 3 ELSE 2 END) END)`,
    num: `(CASE WHEN ${t} = 'number' THEN (${x})::numeric END)`,
    txt: `((CASE WHEN ${t} IN ('string', 'boolean') THEN ${s} END) COLLATE "C")`,
  };
}
