import { checkAttributes, compileAttributes } from './attributes.js';
import { invalidQuery, isPlainObject } from './errors.js';
import { type Budget, filterEntries, startBudget } from './filter-entries.js';
import { checkPair, compileOrder, sortEntries, type OrderKey } from './order.js';
import type { Direction, EntryRecord, JoinLoader, JoinRef, JoinSpec } from './types.js';
import { compileEntryColumn, numericValue } from './values.js';
import { withoutDataPrefix } from './data-prefix.js';
import { compileWhere } from './where.js';

/**
 * `join.<Name>`: entries of another data source (`dataSourceId` or `dataSourceName`) matched by
 * `on: { '<parent column>': '<joined column>' }` (several pairs form a composite key; columns as in
 * `order`: `id`, `data.<col>` or a bare data column). Key values match across types when numeric (`5`
 * matches `"5"`), text matches exactly; when a single-pair key value is an array, each element is a key.
 * Each parent gets `joins.<Name>`: an array of `{ id, dataSourceId, data }` (joined `where`, `order`,
 * per-parent `limit`, `attributes` for the data columns), or with `has` a boolean, `count` the number of
 * matches, `sum: '<col>'` the sum of that column's numeric values (limit ignored for those three).
 * `required: true` drops parents without matches. Without `on`, the joined entries (matching its
 * `where`, in its `order`, at most `limit`) are appended to the result before ordering and pagination.
 */
export interface CompiledJoin {
  name: string;
  ref: JoinRef;
  on: { parent: (e: EntryRecord) => unknown; joined: (e: EntryRecord) => unknown }[] | null;
  where: (e: EntryRecord) => boolean;
  /** The `where` as given (`data.` prefixes removed), for the loader to pick candidates with. */
  whereSource: unknown;
  order: OrderKey[];
  limit: number;
  required: boolean;
  mode: 'entries' | 'has' | 'count' | 'sum';
  sum: ((e: EntryRecord) => unknown) | null;
  project: (e: EntryRecord) => Record<string, unknown>;
}

const BOOLEAN_FIELDS = ['required', 'has', 'count'] as const;

export function compileJoins(join: unknown, field = 'join'): CompiledJoin[] {
  if (join === undefined || join === null) return [];
  if (!isPlainObject(join)) throw invalidQuery(`${field} must be an object { <Name>: { dataSourceId | dataSourceName, on, … } }`);
  return Object.keys(join).map((name) => compileJoin(name, join[name], `${field}.${name}`));
}

function compileJoin(name: string, raw: unknown, field: string): CompiledJoin {
  if (!isPlainObject(raw)) throw invalidQuery(`${field} must be an object`);
  const spec = raw as JoinSpec & Record<string, unknown>;
  const ref: JoinRef = {};
  if (spec.dataSourceId !== undefined && spec.dataSourceId !== null) {
    if (!Number.isSafeInteger(spec.dataSourceId) || (spec.dataSourceId as number) <= 0) throw invalidQuery(`${field}.dataSourceId must be a positive integer`);
    ref.dataSourceId = spec.dataSourceId;
  }
  if (spec.dataSourceName !== undefined && spec.dataSourceName !== null) {
    if (typeof spec.dataSourceName !== 'string' || spec.dataSourceName === '') throw invalidQuery(`${field}.dataSourceName must be a non-empty string`);
    ref.dataSourceName = spec.dataSourceName;
  }
  if (ref.dataSourceId === undefined && ref.dataSourceName === undefined) throw invalidQuery(`${field} needs dataSourceId or dataSourceName`);
  for (const flag of BOOLEAN_FIELDS) {
    if (spec[flag] !== undefined && typeof spec[flag] !== 'boolean') throw invalidQuery(`${field}.${flag} must be a boolean`);
  }
  if (spec.sum !== undefined && (typeof spec.sum !== 'string' || spec.sum === '')) throw invalidQuery(`${field}.sum must be a column name`);
  const modes = [spec.has === true && 'has', spec.count === true && 'count', spec.sum !== undefined && 'sum'].filter(Boolean);
  if (modes.length > 1) throw invalidQuery(`${field}: use only one of has, count and sum`);

  let on: CompiledJoin['on'] = null;
  if (spec.on !== undefined && spec.on !== null) {
    if (!isPlainObject(spec.on) || Object.keys(spec.on).length === 0)
      throw invalidQuery(`${field}.on must be an object { '<parent column>': '<joined column>' }`);
    on = Object.keys(spec.on).map((parentColumn) => {
      const joinedColumn = (spec.on as Record<string, unknown>)[parentColumn];
      if (typeof joinedColumn !== 'string' || joinedColumn === '') throw invalidQuery(`${field}.on.${parentColumn} must be a column name`);
      return { parent: compileEntryColumn(parentColumn), joined: compileEntryColumn(joinedColumn) };
    });
  } else if (modes.length > 0 || spec.required !== undefined) {
    throw invalidQuery(`${field}: has, count, sum and required need on`);
  }

  let limit = 0;
  if (spec.limit !== undefined && spec.limit !== null) {
    if (!Number.isSafeInteger(spec.limit) || (spec.limit as number) < 0) throw invalidQuery(`${field}.limit must be a non-negative integer`);
    limit = spec.limit as number;
  }
  let orderPairs: [string, Direction][] | undefined;
  if (spec.order !== undefined && spec.order !== null) {
    if (!Array.isArray(spec.order)) throw invalidQuery(`${field}.order must be [column, 'ASC' | 'DESC']`);
    orderPairs =
      typeof spec.order[0] === 'string'
        ? [checkPair(spec.order, `${field}.order`)]
        : (spec.order as unknown[]).map((pair, i) => checkPair(pair, `${field}.order[${i}]`));
  }
  checkAttributes(spec.attributes, `${field}.attributes`);
  const projection = compileAttributes(spec.attributes, `${field}.attributes`);
  return {
    name,
    ref,
    on,
    where: compileWhere(spec.where, `${field}.where`),
    whereSource: withoutDataPrefix(spec.where),
    order: compileOrder(orderPairs, `${field}.order`),
    limit,
    required: spec.required === true,
    mode: (modes[0] as CompiledJoin['mode'] | undefined) ?? 'entries',
    sum: spec.sum !== undefined ? compileEntryColumn(spec.sum) : null,
    project: projection
      ? (e) => ({ id: e.id, dataSourceId: e.dataSourceId, ...projection(e) })
      : (e) => ({ id: e.id, dataSourceId: e.dataSourceId, data: e.data }),
  };
}

/** Canonical text of a key value: numbers and numeric strings as numbers, other text as is. */
function keyOf(value: unknown): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? `n${value}` : null;
  if (typeof value === 'string') {
    const n = numericValue(value);
    return n === n ? `n${n}` : `s${value}`;
  }
  if (typeof value === 'boolean') return `b${value}`;
  return null;
}

function keysOf(entry: EntryRecord, getters: ((e: EntryRecord) => unknown)[]): string[] {
  if (getters.length === 1) {
    const value = getters[0]!(entry);
    if (Array.isArray(value)) {
      const keys: string[] = [];
      for (const item of value) {
        const key = keyOf(item);
        if (key !== null && !keys.includes(key)) keys.push(key);
      }
      return keys;
    }
    const key = keyOf(value);
    return key === null ? [] : [key];
  }
  let composite = '';
  for (const get of getters) {
    const key = keyOf(get(entry));
    if (key === null) return [];
    composite += `${key}\u0000`;
  }
  return [composite];
}

/** A loaded join: matching entries per parent. */
export interface LoadedJoin {
  join: CompiledJoin;
  /** Joins without `on`: the entries to append. */
  appended: EntryRecord[];
  matchesOf(parent: EntryRecord): EntryRecord[];
}

/** Reads a join's data source and matches its `where`, under the query's `budget` (422 QUERY_TIMEOUT past it). */
export async function loadJoin(join: CompiledJoin, loader: JoinLoader, budget: Budget = startBudget()): Promise<LoadedJoin> {
  const field = `join.${join.name}.where`;
  const best = !join.on && join.limit > 0 ? { order: join.order, count: join.limit } : undefined;
  const all = await loader.load(join.ref, { source: join.whereSource, test: join.where, field, ...(best ? { best } : {}) }, budget);
  const matching = filterEntries(all, join.where, budget, field);
  const ordered = sortEntries(matching, join.order, join.on ? 0 : join.limit);
  if (!join.on) return { join, appended: ordered, matchesOf: () => [] };

  const position = new Map<EntryRecord, number>();
  const index = new Map<string, EntryRecord[]>();
  const joinedGetters = join.on.map((pair) => pair.joined);
  const parentGetters = join.on.map((pair) => pair.parent);
  ordered.forEach((entry, i) => {
    position.set(entry, i);
    for (const key of keysOf(entry, joinedGetters)) {
      const bucket = index.get(key);
      if (bucket) bucket.push(entry);
      else index.set(key, [entry]);
    }
  });
  return {
    join,
    appended: [],
    matchesOf(parent) {
      const keys = keysOf(parent, parentGetters);
      if (keys.length === 0) return [];
      if (keys.length === 1) return index.get(keys[0]!) ?? [];
      const merged = new Set<EntryRecord>();
      for (const key of keys) for (const entry of index.get(key) ?? []) merged.add(entry);
      return [...merged].sort((a, b) => position.get(a)! - position.get(b)!);
    },
  };
}

/** The value of `joins.<Name>` for one parent. */
export function joinValue(loaded: LoadedJoin, matches: EntryRecord[]): unknown {
  const { join } = loaded;
  switch (join.mode) {
    case 'has':
      return matches.length > 0;
    case 'count':
      return matches.length;
    case 'sum': {
      let total = 0;
      for (const entry of matches) {
        const n = numericValue(join.sum!(entry));
        if (n === n) total += n;
      }
      return total;
    }
    default: {
      const list = join.limit > 0 && matches.length > join.limit ? matches.slice(0, join.limit) : matches;
      return list.map(join.project);
    }
  }
}
