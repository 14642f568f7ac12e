import type { AggregateDialect, Col } from './aggregate-dialect.js';
import { literal } from './fragment.js';

/**
 * aggregate-dialect.ts on SQLite (JSON1 over the `data` text; SQLite keeps the last documents parsed, so the
 * calls on one row parse it once). A grouped value is its JSON text (`->`, one call): equal texts are equal
 * values, and aggregate.ts checks that no two groups hold equal values (texts JS did not write, `1.0` and `1`).
 * `json_type` NULL is a missing value, or a path through a scalar or an array (a key of an array reads nothing
 * in a JSON path): mingo reads missing in the first case, an array in the second, hence the prefix test when
 * the document holds a `[`.
 */
const jsonPath = (segments: readonly string[]) => literal('$' + segments.map((s) => `."${s}"`).join('')).text;

/** An array on the path before its end (only asked when the value itself is missing). */
function throughArray(segments: readonly string[], missing: string, col: Col): string {
  if (segments.length < 2) return 'FALSE';
  const prefixes = segments.slice(0, -1).map((_, i) => `json_type(e.data, ${jsonPath(segments.slice(0, i + 1))}) = 'array'`);
  return `(${missing} AND ${col(`(instr(e.data, '[') > 0 AND (${prefixes.join(' OR ')}))`)})`;
}

/** Strings whose order SQL does not keep (UTF-8 and UTF-16 orders differ from U+E000 up) or NUL. */
const oddText = (v: string) => `(instr(${v}, char(0)) > 0 OR ${v} GLOB '*[\u{E000}-\u{10FFFF}]*')`;

export const sqliteAggregate: AggregateDialect = {
  fence: 'LIMIT -1',
  key(segments, prefix, missingIsNull, col) {
    const k = col(`(e.data -> ${jsonPath(segments)})`);
    const v = missingIsNull ? `COALESCE(${k}, 'null')` : k;
    return {
      select: [`${v} AS ${prefix}v`, missingIsNull ? `0 AS ${prefix}m` : `(${k} IS NULL) AS ${prefix}m`],
      group: [v],
      amb: `(substr(${k}, 1, 1) IN ('[', '{') OR ${throughArray(segments, `${k} IS NULL`, col)})`,
    };
  },
  accumulator(acc, p, col) {
    const t = col(`json_type(e.data, ${jsonPath(acc.segments)})`);
    const v = col(`json_extract(e.data, ${jsonPath(acc.segments)})`);
    const isNumber = `${t} IN ('integer', 'real')`;
    if (acc.op === 'sum' || acc.op === 'avg') {
      // Numbers only (mingo skips everything else, arrays included); `_x` tells aggregate.ts whether the sum is exact.
      return {
        select: [
          `SUM(CASE WHEN ${isNumber} THEN ${v} END) AS ${p}_s`,
          `COUNT(CASE WHEN ${isNumber} THEN 1 END) AS ${p}_c`,
          `TOTAL(CASE WHEN ${isNumber} THEN abs(${v}) END) AS ${p}_a`,
          `MAX(CASE WHEN ${t} = 'real' THEN (CASE WHEN ${v} = CAST(${v} AS INTEGER) THEN 0 WHEN ${v} * 1024 = CAST(${v} * 1024 AS INTEGER) THEN 1 ELSE 2 END) ELSE 0 END) AS ${p}_x`,
        ],
        amb: null,
      };
    }
    const f = acc.op === 'min' ? 'MIN' : 'MAX';
    return {
      select: [
        `${f}(CASE WHEN ${isNumber} THEN ${v} END) AS ${p}_n`,
        `${f}(CASE WHEN ${t} = 'text' THEN ${v} END) AS ${p}_t`,
        `MAX(CASE WHEN ${t} = 'true' THEN 1 ELSE 0 END) AS ${p}_bt`,
        `MAX(CASE WHEN ${t} = 'false' THEN 1 ELSE 0 END) AS ${p}_bf`,
      ],
      amb: `(${t} IN ('array', 'object') OR ${throughArray(acc.segments, `${t} IS NULL`, col)} OR (${t} = 'text' AND ${oddText(v)}))`,
    };
  },
  matchAmbiguous(segments) {
    const arrays = segments.map((_, i) => `json_type(e.data, ${jsonPath(segments.slice(0, i + 1))}) = 'array'`);
    const dotted = segments.length > 1 ? ` OR json_type(e.data, ${jsonPath([segments.join('.')])}) IS NOT NULL` : '';
    return `((instr(e.data, '[') > 0 AND (${arrays.join(' OR ')}))${dotted})`;
  },
  json: (value) => (typeof value === 'string' ? JSON.parse(value) : value),
};
