import type { Queryable } from '../../db/database.js';
import { runAggregate } from '../query/aggregate.js';
import { AggregateBudget, type AggregateLimits } from '../query/budget.js';
import type { AggregateDialect } from './aggregate-dialect.js';
import type { Accumulator, SqlAggregatePlan } from './aggregate-plan.js';
import { renderCond } from './dialect.js';
import { raw, sql, type Sql } from './fragment.js';
import { postgresAggregate } from './postgres-aggregate.js';
import { dialectOf } from './select.js';
import { sqliteAggregate } from './sqlite-aggregate.js';
import { indexedGroupPath, orderBounds, runIndexedGroup } from './aggregate-indexed.js';

/**
 * Runs an aggregation plan (aggregate-plan.ts) as one statement: the groups of the entries matching `where`
 * and `$match`, with their accumulators, in mingo's order (a group comes where its first entry comes in the
 * default order, `order` ASC then `id` DESC), then the rest of the pipeline on mingo over the groups. Only the
 * groups are read, never the entries. null when the statement saw something it does not answer exactly as
 * mingo (the caller then runs the JS evaluator):
 *
 * - an "ambiguous" row (aggregate-dialect.ts): an array on a grouped or `$min`/`$max` path or on a `$match`
 *   path, an object or array grouped or compared, a string whose order SQL does not keep;
 * - a `$sum`/`$avg` whose total may differ: mingo adds doubles one by one in entry order, the database in its
 *   own order (and SQLite with compensation). The two agree when every partial sum is exact: integers with a
 *   total of absolute values up to 2^52, or multiples of 1/1024 up to 2^42;
 * - `order` or ids out of the range where first-appearance keys (`sort_order * 2^32 - id`) are exact;
 *
 * The groups are charged to the same budget as mingo's `$group` output (budget.ts), so a too large answer is
 * 422 AGGREGATE_TOO_LARGE here too; the statement reads at most one group more than the budget can hold.
 */
const aggregateDialectOf = (engine: 'sqlite' | 'postgres'): AggregateDialect => (engine === 'postgres' ? postgresAggregate : sqliteAggregate);

/** The least budget a group document is charged (an object and one field): more groups cannot fit. */
const MIN_GROUP_BYTES = 40;
const SAFE_ORDER = 2 ** 30;
const SAFE_ID = 2 ** 32;

type Row = Record<string, unknown>;
type SumAccumulator = Extract<Accumulator, { op: 'sum' | 'avg' | 'min' | 'max' }>;

/** The statement of a plan (exported for EXPLAIN in tests and benchmarks). */
export function aggregateStatement(engine: 'sqlite' | 'postgres', dataSourceId: number, plan: SqlAggregatePlan, maxGroups: number): Sql {
  const dialect = dialectOf(engine);
  const agg = aggregateDialectOf(engine);
  const rowColumns = new Map<string, string>();
  const col = (expr: string) => {
    let name = rowColumns.get(expr);
    if (!name) rowColumns.set(expr, (name = `c${rowColumns.size}`));
    return `r.${name}`;
  };
  // First appearance orders several groups; one group (`_id: null`) needs none.
  const select: string[] =
    plan.key.kind === 'null'
      ? ['COUNT(*) AS n', '0 AS fa', '0 AS omin', '0 AS omax', '0 AS idmax']
      : ['COUNT(*) AS n', 'MIN(r.so * 4294967296 - r.id) AS fa', ...orderBounds(dataSourceId)];
  const group: string[] = [];
  // A row the `$match` might treat otherwise than mingo is kept (and flagged) whether or not SQL matches it.
  const matchAmb = plan.matchPaths.map((segments) => agg.matchAmbiguous(segments));
  const ambiguous: string[] = matchAmb.length > 0 ? [`${col(`(CASE WHEN ${matchAmb.join(' OR ')} THEN 1 ELSE 0 END)`)} = 1`] : [];
  const keys = plan.key.kind === 'path' ? [plan.key.segments] : plan.key.kind === 'object' ? plan.key.fields.map((f) => f.segments) : [];
  keys.forEach((segments, i) => {
    const key = agg.key(segments, `k${i}`, plan.key.kind === 'path', col);
    select.push(...key.select);
    group.push(...key.group);
    ambiguous.push(key.amb);
  });
  plan.accumulators.forEach((acc, i) => {
    if (acc.op === 'count' || acc.op === 'times') return;
    const out = agg.accumulator(acc, `a${i}`, col);
    select.push(...out.select);
    if (out.amb) ambiguous.push(out.amb);
  });
  const amb = [...new Set(ambiguous)];
  select.push(amb.length > 0 ? `MAX(CASE WHEN ${amb.join(' OR ')} THEN 1 ELSE 0 END) AS amb` : '0 AS amb');
  const filter =
    matchAmb.length > 0
      ? sql`(${renderCond(dialect, plan.query)} AND (${renderCond(dialect, plan.match)} OR ${raw(matchAmb.join(' OR '))}))`
      : renderCond(dialect, plan.where);
  const inner = ['e.id AS id', 'e.sort_order AS so', ...[...rowColumns].map(([expr, name]) => `${expr} AS ${name}`)].join(', ');
  const groupBy = group.length > 0 ? ` GROUP BY ${group.join(', ')}` : '';
  return sql`SELECT ${raw(select.join(', '))} FROM (SELECT ${raw(inner)} FROM ${dialect.entries(dataSourceId)} WHERE ${filter} ${raw(agg.fence)}) r${raw(groupBy)} ORDER BY fa LIMIT ${raw(String(maxGroups + 1))}`;
}

const num = (value: unknown) => (value === null || value === undefined ? null : Number(value));
const yes = (value: unknown) => value === 1 || value === true || value === '1';

/** A grouped value from its columns (aggregate-dialect.ts); undefined when missing. */
const keyValue = (agg: AggregateDialect, row: Row, p: string): unknown => (yes(row[`${p}m`]) ? undefined : agg.json(row[`${p}v`]));

/** The accumulator's value, or undefined when the database's answer may differ from mingo's. */
function accumulated(acc: Accumulator, row: Row, p: string, n: number): unknown {
  switch (acc.op) {
    case 'count':
      return n;
    case 'times':
      return n * acc.value;
    case 'sum':
    case 'avg':
      return sumOf(acc, row, p);
    case 'min': {
      if (row[`${p}_n`] !== null) return num(row[`${p}_n`]);
      if (row[`${p}_t`] !== null) return row[`${p}_t`];
      if (yes(row[`${p}_bf`])) return false;
      return yes(row[`${p}_bt`]) ? true : null;
    }
    case 'max': {
      if (yes(row[`${p}_bt`])) return true;
      if (yes(row[`${p}_bf`])) return false;
      if (row[`${p}_t`] !== null) return row[`${p}_t`];
      return num(row[`${p}_n`]);
    }
  }
}

function sumOf(acc: SumAccumulator, row: Row, p: string): unknown {
  const count = Number(row[`${p}_c`]);
  if (count === 0) return acc.op === 'sum' ? 0 : null;
  const absolute = Number(row[`${p}_a`]);
  const fractions = Number(row[`${p}_x`]);
  const exact = (fractions === 0 && absolute <= 2 ** 52) || (fractions <= 1 && absolute <= 2 ** 42);
  if (!exact) return undefined;
  const sum = Number(row[`${p}_s`]);
  return acc.op === 'sum' ? sum : sum / count;
}

/** One group document as mingo's `$group` builds it, or undefined when it may differ. */
function groupDocument(agg: AggregateDialect, plan: SqlAggregatePlan, row: Row): Record<string, unknown> | undefined {
  const n = Number(row.n);
  const doc: Record<string, unknown> = {};
  if (plan.key.kind === 'null') doc._id = null;
  else if (plan.key.kind === 'path') doc._id = keyValue(agg, row, 'k0') ?? null;
  else {
    const id: Record<string, unknown> = {};
    // As mingo: a missing value is a key holding undefined (it counts when `$sort` compares ids).
    plan.key.fields.forEach((field, i) => {
      id[field.name] = keyValue(agg, row, `k${i}`);
    });
    doc._id = id;
  }
  for (let i = 0; i < plan.accumulators.length; i++) {
    const acc = plan.accumulators[i]!;
    const value = accumulated(acc, row, `a${i}`, n);
    if (value === undefined) return undefined;
    doc[acc.name] = value;
  }
  return doc;
}

/** Equal for ids mingo groups together (scalars, or objects of scalars and undefined, by field). */
const idSignature = (id: unknown): string =>
  id !== null && typeof id === 'object' ? JSON.stringify(Object.entries(id).map(([k, v]) => [k, v === undefined ? 'u' : 'v', v ?? null])) : JSON.stringify(id);

/** The group documents of the scan statement, or null when it flagged something. */
async function scanGroups(db: Queryable, engine: 'sqlite' | 'postgres', dataSourceId: number, plan: SqlAggregatePlan, maxGroups: number) {
  const statement = aggregateStatement(engine, dataSourceId, plan, maxGroups);
  const rows = await db.all<Row>(statement.text, statement.params);
  for (const row of rows) {
    if (Number(row.n) === 0) continue;
    if (yes(row.amb) || Math.abs(Number(row.omin)) >= SAFE_ORDER || Math.abs(Number(row.omax)) >= SAFE_ORDER || Number(row.idmax) >= SAFE_ID) return null;
  }
  const agg = aggregateDialectOf(engine);
  const docs: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    // `_id: null` over no entries: mingo has no group at all.
    if (Number(row.n) === 0) continue;
    const doc = groupDocument(agg, plan, row);
    if (!doc) return null;
    // Two groups with equal ids (JSON texts JS would not write, e.g. `1.0` beside `1`): mingo has one.
    const id = idSignature(doc._id);
    if (seen.has(id)) return null;
    seen.add(id);
    docs.push(doc);
  }
  return docs;
}

/** The group documents read from the key's index (aggregate-indexed.ts), or null. */
async function indexGroups(db: Queryable, dataSourceId: number, plan: SqlAggregatePlan, segments: readonly string[], maxGroups: number) {
  const groups = await runIndexedGroup(db, dataSourceId, segments, maxGroups);
  if (!groups) return null;
  return groups.map((group) => {
    const doc: Record<string, unknown> = { _id: group.id };
    for (const acc of plan.accumulators) doc[acc.name] = acc.op === 'times' ? group.n * acc.value : group.n;
    return doc;
  });
}

/**
 * The answer of the plan, or null (the JS evaluator answers). `indexed`: data paths with an expression index
 * (indexes.ts); a counting `$group` over all entries on one of them reads the index alone (SQLite).
 */
export async function runSqlAggregate(
  db: Queryable,
  engine: 'sqlite' | 'postgres',
  dataSourceId: number,
  plan: SqlAggregatePlan,
  limits: AggregateLimits,
  indexed: ReadonlySet<string> = new Set(),
): Promise<unknown[] | null> {
  const maxGroups = Math.floor(limits.bytes / MIN_GROUP_BYTES);
  const path = indexedGroupPath(engine, plan, indexed);
  const docs = (path && (await indexGroups(db, dataSourceId, plan, path, maxGroups))) || (await scanGroups(db, engine, dataSourceId, plan, maxGroups));
  if (!docs) return null;
  const budget = new AggregateBudget(limits);
  for (const doc of docs) {
    budget.tick();
    budget.charge(budget.checkTree(doc, 'a document of $group'), '$group');
  }
  // Unreachable while every group is charged MIN_GROUP_BYTES or more (the budget refused them first).
  if (docs.length > maxGroups) return null;
  if (plan.tail.length > 0) return runAggregate(docs as never, plan.tail, 'aggregate', limits);
  return budget.checkTree(docs, 'the result');
}
