import type { AggregateDialect, Col } from './aggregate-dialect.js';
import { literal } from './fragment.js';

/**
 * aggregate-dialect.ts on PostgreSQL (jsonb `e.doc`, parsed once per row by dialect.entries). A grouped
 * value is jsonb (equality is type-strict and numeric: 1 = 1.0); numbers are numerics (exact: sums, and the
 * decimal forms JS writes, which give back the same doubles); text compares under COLLATE "C". `->` with a key
 * on an array is NULL, like a missing key: hence the prefix test.
 */
const at = (segments: readonly string[]) => `(e.doc${segments.map((s) => ` -> ${literal(s).text}`).join('')})`;

function throughArray(segments: readonly string[], missing: string, col: Col): string {
  if (segments.length < 2) return 'FALSE';
  const prefixes = segments.slice(0, -1).map((_, i) => `jsonb_typeof(${at(segments.slice(0, i + 1))}) = 'array'`);
  return `(${missing} AND ${col(`COALESCE(${prefixes.join(' OR ')}, FALSE)`)})`;
}

export const postgresAggregate: AggregateDialect = {
  fence: 'OFFSET 0',
  key(segments, prefix, missingIsNull, col) {
    const x = col(at(segments));
    const v = missingIsNull ? `COALESCE(${x}, 'null'::jsonb)` : x;
    return {
      select: [`${v} AS ${prefix}v`, missingIsNull ? `0 AS ${prefix}m` : `(CASE WHEN ${x} IS NULL THEN 1 ELSE 0 END) AS ${prefix}m`],
      group: missingIsNull ? [v] : [x],
      amb: `(COALESCE(jsonb_typeof(${x}) IN ('array', 'object'), FALSE) OR ${throughArray(segments, `${x} IS NULL`, col)})`,
    };
  },
  accumulator(acc, p, col) {
    const x = col(at(acc.segments));
    const t = `jsonb_typeof(${x})`;
    const n = `(CASE WHEN ${t} = 'number' THEN (${x})::numeric END)`;
    if (acc.op === 'sum' || acc.op === 'avg') {
      return {
        select: [
          `SUM(${n}) AS ${p}_s`,
          `COUNT(${n}) AS ${p}_c`,
          `COALESCE(SUM(abs(${n})), 0) AS ${p}_a`,
          `COALESCE(MAX(CASE WHEN ${n} IS NULL OR ${n} = trunc(${n}) THEN 0 WHEN ${n} * 1024 = trunc(${n} * 1024) THEN 1 ELSE 2 END), 0) AS ${p}_x`,
        ],
        amb: null,
      };
    }
    const f = acc.op === 'min' ? 'MIN' : 'MAX';
    const s = `(${x} #>> '{}')`;
    return {
      select: [
        `${f}(${n}) AS ${p}_n`,
        `${f}((CASE WHEN ${t} = 'string' THEN ${s} END) COLLATE "C") AS ${p}_t`,
        `MAX(CASE WHEN ${x} = 'true'::jsonb THEN 1 ELSE 0 END) AS ${p}_bt`,
        `MAX(CASE WHEN ${x} = 'false'::jsonb THEN 1 ELSE 0 END) AS ${p}_bf`,
      ],
      amb: `(COALESCE(${t} IN ('array', 'object'), FALSE) OR ${throughArray(acc.segments, `${x} IS NULL`, col)} OR COALESCE(${t} = 'string' AND ${s} ~ '[\u{E000}-\u{10FFFF}]', FALSE))`,
    };
  },
  matchAmbiguous(segments) {
    const arrays = segments.map((_, i) => `COALESCE(jsonb_typeof(${at(segments.slice(0, i + 1))}) = 'array', FALSE)`);
    if (segments.length > 1) arrays.push(`${at([segments.join('.')])} IS NOT NULL`);
    return `(${arrays.join(' OR ')})`;
  },
  json: (value) => value,
};
