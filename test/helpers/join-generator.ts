/**
 * A seeded generator of two data sources' entries with join keys of mixed types, and of select bodies with
 * joins, for test/integration/sql-join-differential.test.ts. Keys are numbers, numeric strings (plain integers,
 * and others whose numeric reading SQL does not reproduce), text, booleans, null, missing, arrays and objects;
 * `plain: true` marks the entries whose keys are neither arrays, objects nor such numeric strings, so that a
 * `where` on it lets many queries translate while the others exercise the fallback.
 */
import { entryData, queryBody, where, type Rng } from './query-generator.js';

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const int = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));

const KEY_NUMBERS = [0, 1, 2, 3, 5, 10, -1, 100, 2.5, 0.1, 1e21, 2 ** 53, 123456789012345];
const KEY_INTEGER_STRINGS = ['0', '1', '2', '3', '5', '10', '-1', '100', '123456789012345'];
const KEY_TEXT = ['a', 'b', 'A', 'é', '', 'x y', 'true', 'false', 'null', 'Infinity', '名前', '1a', '0x10', '1,5'];
/**
 * Values whose key SQL does not build (joins.ts): numeric strings other than plain integers, text made only of
 * characters of numbers (`'e'`, `'-'`: not numeric, but SQL does not tell), arrays, objects.
 */
const KEY_AMBIGUOUS: readonly unknown[] = [
  'e',
  '-',
  '2.5',
  ' 3',
  '05',
  '1e1',
  '+1',
  '-0',
  '1.0',
  '0.1',
  '1e21',
  '9007199254740992',
  [1, '2'],
  ['a', 3, null],
  [],
  [[1]],
  { x: 1 },
];

/** A key value, or undefined (missing), and whether it is plain (see the header). */
export function keyValue(rng: Rng, ids: readonly number[] = []): { value: unknown; plain: boolean } {
  const r = rng();
  if (r < 0.32) return { value: pick(rng, KEY_NUMBERS), plain: true };
  if (r < 0.52) return { value: pick(rng, KEY_INTEGER_STRINGS), plain: true };
  if (r < 0.67) return { value: pick(rng, KEY_TEXT), plain: true };
  if (r < 0.72) return { value: rng() < 0.5, plain: true };
  if (r < 0.79) return { value: null, plain: true };
  if (r < 0.86) return { value: undefined, plain: true };
  if (r < 0.93 && ids.length > 0) {
    const id = pick(rng, ids);
    return { value: rng() < 0.5 ? id : String(id), plain: true };
  }
  return { value: pick(rng, KEY_AMBIGUOUS), plain: false };
}

/** One entry's data: entryData's columns plus the key columns `names` (each a keyValue) and `plain`. */
export function keyedEntry(rng: Rng, names: readonly string[], ids: readonly number[] = []): Record<string, unknown> {
  const data = entryData(rng);
  let plain = true;
  for (const name of names) {
    const key = keyValue(rng, ids);
    if (key.value !== undefined) data[name] = key.value;
    plain &&= key.plain;
  }
  data.plain = plain;
  return data;
}

/** Values SQL does not sum exactly: fractions, strings that may be numeric, arrays, objects, numbers past 2^52. */
const ROUGH: readonly unknown[] = [2.5, 0.1, ' 4', '1e3', '3.0', [1, 2], { x: 1 }, 2 ** 53, 1e21];

/**
 * An amount to sum: integers and integer strings, text, booleans, null or missing; when not `plain`, often a
 * ROUGH value; with `rough`, one time in 20 whatever `plain` says (a column whose sums are mostly flagged).
 */
export function amountValue(rng: Rng, plain: boolean, rough = false): unknown {
  if (rough && rng() < 0.05) return pick(rng, ROUGH);
  const r = rng();
  if (!plain && r < 0.4) return pick(rng, ROUGH);
  if (r < 0.6) return int(rng, -50, 50);
  if (r < 0.72) return String(int(rng, -50, 50));
  if (r < 0.8) return pick(rng, ['a', '', 'x y', 'true']);
  if (r < 0.86) return rng() < 0.5;
  if (r < 0.93) return null;
  return undefined;
}

/** `on` pairs: translated ones (pairs of `id` or a one-segment data column), and some that are not. */
const ONS: readonly Record<string, string>[] = [
  { pk: 'ck' },
  { pk: 'ck' },
  { 'data.pk': 'data.ck' },
  { id: 'pid' },
  { pk: 'id' },
  { pk2: 'ck' },
  { pk: 'ck2' },
  { pk2: 'ck2' },
  { pk: 'data.ck' },
  { id: 'pid' },
  // Composite keys (several pairs; translated since 2026-11-28).
  { pk: 'ck', pk2: 'ck2' },
  { pk2: 'ck2', pk: 'ck' },
  { pk: 'ck2', id: 'pid' },
  { pk: 'ck', pk2: 'ck2', id: 'pid' },
  // Not translated: a dotted column, an entry field other than id.
  { 'obj.x': 'ck' },
  { pk: 'ck', 'obj.x': 'ck2' },
  { order: 'ck' },
];

/** One join: mostly `has`/`count` (translated), sometimes `sum` or the entries mode (not). */
function joinSpec(rng: Rng, joined: { id: number; name: string }, bounds: { maxId: number; times: string[] }): Record<string, unknown> {
  const spec: Record<string, unknown> = rng() < 0.7 ? { dataSourceId: joined.id } : { dataSourceName: joined.name };
  spec.on = pick(rng, ONS);
  const r = rng();
  if (r < 0.3) spec.has = true;
  else if (r < 0.57) spec.count = true;
  else if (r < 0.97) spec.sum = pick(rng, ['amount', 'amount', 'amount', 'data.amount', 'rough', 'ck', 'id', 'obj.x']);
  if (rng() < 0.4) spec.required = true;
  if (rng() < 0.92) {
    // Entry fields (`$id`…) are top-level keys only: `plain` joins them there.
    const joinedWhere: Record<string, unknown> = rng() < 0.5 ? where(rng, bounds) : {};
    if (rng() < 0.88) joinedWhere.plain = true;
    spec.where = joinedWhere;
  }
  if (rng() < 0.1) spec.limit = int(rng, 1, 3);
  return spec;
}

/** A select body of query-generator's queryBody with 1-2 joins, its `where` often restricted to plain keys. */
export function joinQueryBody(rng: Rng, joined: { id: number; name: string }, bounds: { maxId: number; times: string[] }): Record<string, unknown> {
  const body = queryBody(rng, bounds);
  if (rng() < 0.5) delete body.where;
  if (rng() < 0.88) body.where = { ...(body.where as object | undefined), plain: true };
  const join: Record<string, unknown> = { A: joinSpec(rng, joined, bounds) };
  if (rng() < 0.3) join.B = joinSpec(rng, joined, bounds);
  body.join = join;
  return body;
}
