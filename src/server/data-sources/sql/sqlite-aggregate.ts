import type { AggregateDialect } from './aggregate-dialect.js';
import { literal } from './fragment.js';

/**
 * aggregate-dialect.ts on SQLite (JSON1 over the `data` text; SQLite keeps the last documents parsed, so the
 * calls on one row parse it once). `json_type` NULL is a missing value, or a path through a scalar or an array
 * (a key of an array reads nothing in a JSON path): mingo reads missing in the first case, an array in the
 * second, hence the prefix test when the document holds a `[`.
 */
const jsonPath = (segments: readonly string[]) => literal('$' + segments.map((s) => `."${s}"`).join('')).text;

function parts(segments: readonly string[]) {
  const path = jsonPath(segments);
  const t = `json_type(e.data, ${path})`;
  const v = `json_extract(e.data, ${path})`;
  const prefixes = segments.slice(0, -1).map((_, i) => `json_type(e.data, ${jsonPath(segments.slice(0, i + 1))}) = 'array'`);
  const throughArray = prefixes.length === 0 ? 'FALSE' : `(${t} IS NULL AND instr(e.data, '[') > 0 AND (${prefixes.join(' OR ')}))`;
  return { t, v, throughArray };
}

const isNumber = (t: string) => `${t} IN ('integer', 'real')`;
/** Strings whose order SQL does not keep (UTF-8 and UTF-16 orders differ from U+E000 up) or NUL. */
const oddText = (v: string) => `(instr(${v}, char(0)) > 0 OR ${v} GLOB '*[\u{E000}-\u{10FFFF}]*')`;

export const sqliteAggregate: AggregateDialect = {
  key(segments, prefix, missing) {
    const { t, v, throughArray } = parts(segments);
    const c = `(CASE ${t} WHEN 'integer' THEN 1 WHEN 'real' THEN 1 WHEN 'text' THEN 2 WHEN 'true' THEN 3 WHEN 'false' THEN 3 WHEN 'null' THEN 0 WHEN 'array' THEN 5 WHEN 'object' THEN 5 ELSE ${missing} END)`;
    return { select: [`${c} AS ${prefix}c`, `${v} AS ${prefix}v`], group: [c, v], amb: `(${t} IN ('array', 'object') OR ${throughArray})` };
  },
  accumulator(acc, p) {
    const { t, v, throughArray } = parts(acc.segments);
    if (acc.op === 'sum' || acc.op === 'avg') {
      // Numbers only (mingo skips everything else, arrays included); the counts tell aggregate.ts whether the sum is exact.
      return {
        select: [
          `SUM(CASE WHEN ${isNumber(t)} THEN ${v} END) AS ${p}_s`,
          `COUNT(CASE WHEN ${isNumber(t)} THEN 1 END) AS ${p}_c`,
          `TOTAL(CASE WHEN ${isNumber(t)} THEN abs(${v}) END) AS ${p}_a`,
          `COUNT(CASE WHEN ${t} = 'real' AND ${v} <> CAST(${v} AS INTEGER) THEN 1 END) AS ${p}_i`,
          `COUNT(CASE WHEN ${t} = 'real' AND ${v} * 1024 <> CAST(${v} * 1024 AS INTEGER) THEN 1 END) AS ${p}_d`,
        ],
        amb: null,
      };
    }
    const f = acc.op === 'min' ? 'MIN' : 'MAX';
    return {
      select: [
        `${f}(CASE WHEN ${isNumber(t)} THEN ${v} END) AS ${p}_n`,
        `${f}(CASE WHEN ${t} = 'text' THEN ${v} END) AS ${p}_t`,
        `MAX(CASE WHEN ${t} = 'true' THEN 1 ELSE 0 END) AS ${p}_bt`,
        `MAX(CASE WHEN ${t} = 'false' THEN 1 ELSE 0 END) AS ${p}_bf`,
      ],
      amb: `(${t} IN ('array', 'object') OR ${throughArray} OR (${t} = 'text' AND ${oddText(v)}))`,
    };
  },
  matchAmbiguous(segments) {
    const arrays = segments.map((_, i) => `json_type(e.data, ${jsonPath(segments.slice(0, i + 1))}) = 'array'`);
    const dotted = segments.length > 1 ? ` OR json_type(e.data, ${jsonPath([segments.join('.')])}) IS NOT NULL` : '';
    return `((instr(e.data, '[') > 0 AND (${arrays.join(' OR ')}))${dotted})`;
  },
};
