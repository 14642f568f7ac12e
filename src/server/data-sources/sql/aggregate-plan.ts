import type { CompiledQuery } from '../query/compile.js';
import { isPlainObject } from '../query/errors.js';
import { type Cond, TRUE, and, columnsOf } from './conditions.js';
import { isTranslatableSegment, pathSegments } from './paths.js';
import { translateWhere } from './where.js';

/**
 * Which `aggregate` pipelines the database runs (docs/sql.md, "Aggregations"): an optional leading `$match`
 * on `data.<path>` keys (where.ts's translation; sift and mingo agree on it when no array is on a tested path,
 * which the statement checks), then `$group` with `_id` null, `'$data.<path>'` or an object of those, and
 * accumulators `$count`, `$sum` (of a number or of `'$data.<path>'`), `$avg`, `$min`, `$max` (of
 * `'$data.<path>'`). The stages after `$group` (`$sort`, `$limit`, `$project`, …) run on mingo over the groups
 * the database returned, so they keep mingo's semantics whatever they are. The query's `where` is translated
 * too; its `order`, `limit` and `offset` (which choose the pipeline's input) must be absent.
 */
export type GroupKey = { kind: 'null' } | { kind: 'path'; segments: string[] } | { kind: 'object'; fields: { name: string; segments: string[] }[] };

export type Accumulator =
  | { name: string; op: 'count' }
  /** `$sum: <number>`: the number of documents times the number. */
  | { name: string; op: 'times'; value: number }
  | { name: string; op: 'sum' | 'avg' | 'min' | 'max'; segments: string[] };

export interface SqlAggregatePlan {
  /** The query's `where` and the leading `$match`, ANDed. */
  where: Cond;
  /** The two apart (a row the `$match` may read otherwise than mingo is flagged only when `query` holds). */
  query: Cond;
  match: Cond;
  /** Data paths the `$match` tests: a row with an array on one (or a literal dotted key) sends the query to mingo. */
  matchPaths: string[][];
  key: GroupKey;
  accumulators: Accumulator[];
  /** The stages after `$group`, run by mingo over the groups. */
  tail: object[];
  /** Top-level data columns read (access rules may hide some: then the plan is not used). */
  columns: Set<string>;
}

/** Output field names: plain identifiers (never `_id`, operators, dotted or prototype names). */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const isName = (name: string) => NAME.test(name) && name !== '_id' && isTranslatableSegment(name);

/** `'$data.<path>'` as the segments of the data path, or null. */
function dataPath(expr: unknown): string[] | null {
  if (typeof expr !== 'string' || !expr.startsWith('$data.')) return null;
  return pathSegments(expr.slice(6));
}

function groupKey(expr: unknown): GroupKey | null {
  if (expr === null) return { kind: 'null' };
  const segments = dataPath(expr);
  if (segments) return { kind: 'path', segments };
  if (!isPlainObject(expr)) return null;
  const names = Object.keys(expr);
  if (names.length === 0 || names.length > 8) return null;
  const fields: { name: string; segments: string[] }[] = [];
  for (const name of names) {
    const path = dataPath(expr[name]);
    if (!isName(name) || !path) return null;
    fields.push({ name, segments: path });
  }
  return { kind: 'object', fields };
}

function accumulator(name: string, spec: unknown): Accumulator | null {
  if (!isName(name) || !isPlainObject(spec)) return null;
  const ops = Object.keys(spec);
  if (ops.length !== 1) return null;
  const op = ops[0]!;
  const arg = spec[op];
  if (op === '$count') return isPlainObject(arg) && Object.keys(arg).length === 0 ? { name, op: 'count' } : null;
  if (op === '$sum' && typeof arg === 'number' && Number.isFinite(arg)) return { name, op: 'times', value: arg };
  if (op !== '$sum' && op !== '$avg' && op !== '$min' && op !== '$max') return null;
  const segments = dataPath(arg);
  return segments && { name, op: op.slice(1) as 'sum' | 'avg' | 'min' | 'max', segments };
}

/** A `$match` on `data.<path>` keys (and `$and`/`$or`/`$nor` of such) as a `where` on data paths, or null. */
function matchAsWhere(match: unknown, paths: string[][]): Record<string, unknown> | null {
  if (!isPlainObject(match)) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(match)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value) || value.length === 0) return null;
      const parts = value.map((part) => matchAsWhere(part, paths));
      if (parts.some((part) => part === null)) return null;
      out[key] = parts;
      continue;
    }
    const segments = key.startsWith('data.') ? pathSegments(key.slice(5)) : null;
    if (!segments) return null;
    paths.push(segments);
    out[segments.join('.')] = value;
  }
  return out;
}

/** The plan of a compiled query with `aggregate`, or null when the database cannot run it exactly. */
export function planSqlAggregate(compiled: CompiledQuery): SqlAggregatePlan | null {
  const { body } = compiled;
  const stages = body.aggregate;
  if (body.type !== 'select' || !stages || body.order?.length || body.limit || body.offset) return null;
  const query = translateWhere(body.where);
  if (!query) return null;
  let i = 0;
  const matchPaths: string[][] = [];
  let match: Cond = TRUE;
  const first = stages[0] as Record<string, unknown> | undefined;
  if (first && Object.hasOwn(first, '$match')) {
    const where = matchAsWhere(first.$match, matchPaths);
    const cond = where && translateWhere(where);
    if (!cond) return null;
    match = cond;
    i++;
  }
  const stage = stages[i] as Record<string, unknown> | undefined;
  if (!stage || !isPlainObject(stage.$group) || !Object.hasOwn(stage.$group, '_id')) return null;
  const spec = stage.$group;
  const key = groupKey(spec._id);
  if (!key) return null;
  const accumulators: Accumulator[] = [];
  for (const name of Object.keys(spec)) {
    if (name === '_id') continue;
    const acc = accumulator(name, spec[name]);
    if (!acc) return null;
    accumulators.push(acc);
  }
  const where = match === TRUE ? query : and([query, match]);
  const columns = columnsOf(where);
  const read = [...matchPaths];
  if (key.kind === 'path') read.push(key.segments);
  if (key.kind === 'object') for (const field of key.fields) read.push(field.segments);
  for (const acc of accumulators) if ('segments' in acc) read.push(acc.segments);
  for (const segments of read) columns.add(segments[0]!);
  return { where, query, match, matchPaths, key, accumulators, tail: stages.slice(i + 1), columns };
}
