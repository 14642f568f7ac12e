import type { AggregateDialect } from './aggregate-dialect.js';
import { literal } from './fragment.js';

/**
 * aggregate-dialect.ts on PostgreSQL (jsonb `e.doc`, parsed once per row by dialect.entries). Numbers are
 * numerics (exact: sums, and the decimal forms JS writes, which give back the same doubles); text compares
 * under COLLATE "C". `->` with a key on an array is NULL, like a missing key: hence the prefix test.
 */
const at = (segments: readonly string[]) => `(e.doc${segments.map((s) => ` -> ${literal(s).text}`).join('')})`;

function parts(segments: readonly string[]) {
  const x = at(segments);
  const t = `jsonb_typeof(${x})`;
  const prefixes = segments.slice(0, -1).map((_, i) => `jsonb_typeof(${at(segments.slice(0, i + 1))}) = 'array'`);
  const throughArray = prefixes.length === 0 ? 'FALSE' : `(${x} IS NULL AND (${prefixes.join(' OR ')}))`;
  return { x, t, throughArray };
}

export const postgresAggregate: AggregateDialect = {
  key(segments, prefix, missing) {
    const { x, t, throughArray } = parts(segments);
    const c = `(CASE ${t} WHEN 'number' THEN 1 WHEN 'string' THEN 2 WHEN 'boolean' THEN 3 WHEN 'null' THEN 0 WHEN 'array' THEN 5 WHEN 'object' THEN 5 ELSE ${missing} END)`;
    // jsonb equality is type-strict and numeric (1 = 1.0); missing and null are one group for a plain `_id`.
    const v = missing === 0 ? `COALESCE(${x}, 'null'::jsonb)` : x;
    return { select: [`${c} AS ${prefix}c`, `${v} AS ${prefix}v`], group: [c, v], amb: `(COALESCE(${t} IN ('array', 'object'), FALSE) OR ${throughArray})` };
  },
  accumulator(acc, p) {
    const { x, t, throughArray } = parts(acc.segments);
    const n = `(CASE WHEN ${t} = 'number' THEN (${x})::numeric END)`;
    if (acc.op === 'sum' || acc.op === 'avg') {
      return {
        select: [
          `SUM(${n}) AS ${p}_s`,
          `COUNT(${n}) AS ${p}_c`,
          `COALESCE(SUM(abs(${n})), 0) AS ${p}_a`,
          `COUNT(CASE WHEN ${n} <> trunc(${n}) THEN 1 END) AS ${p}_i`,
          `COUNT(CASE WHEN ${n} * 1024 <> trunc(${n} * 1024) THEN 1 END) AS ${p}_d`,
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
      amb: `(COALESCE(${t} IN ('array', 'object'), FALSE) OR ${throughArray} OR COALESCE(${t} = 'string' AND ${s} ~ '[\u{E000}-\u{10FFFF}]', FALSE))`,
    };
  },
  matchAmbiguous(segments) {
    const arrays = segments.map((_, i) => `COALESCE(jsonb_typeof(${at(segments.slice(0, i + 1))}) = 'array', FALSE)`);
    if (segments.length > 1) arrays.push(`${at([segments.join('.')])} IS NOT NULL`);
    return `(${arrays.join(' OR ')})`;
  },
};
