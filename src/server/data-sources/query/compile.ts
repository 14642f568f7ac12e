import { checkAttributes, compileAttributes, type Projection } from './attributes.js';
import { checkPipeline } from './aggregate.js';
import { invalidQuery, isPlainObject } from './errors.js';
import { compileJoins, type CompiledJoin } from './joins.js';
import { checkPair, compileOrder, type OrderKey } from './order.js';
import type { Direction, EntryRecord, QueryBody } from './types.js';
import { compileWhere } from './where.js';
import { withoutDataPrefix } from './data-prefix.js';

/** A checked query body with everything compiled once. */
export interface CompiledQuery {
  body: QueryBody;
  where: (entry: EntryRecord) => boolean;
  order: OrderKey[];
  projection: Projection | null;
  joins: CompiledJoin[];
}

function nonNegativeInteger(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw invalidQuery(`${field} must be a non-negative integer`);
  return n;
}

/**
 * Checks a query body and compiles it. `type` defaults to `select`. `limit` 0 means no limit.
 * With `aggregate`, `join`, `attributes` and `includePagination` are refused (the pipeline shapes the
 * output); `order`, `offset` and `limit` select the pipeline's input. With `type: 'delete'` only `where`
 * applies: `aggregate`, `join`, `limit` and `offset` are refused so a delete never removes more or less
 * than what `where` says.
 */
export function compileQuery(raw: unknown): CompiledQuery {
  if (!isPlainObject(raw)) throw invalidQuery('query body must be an object');
  const type = raw.type === undefined || raw.type === null ? 'select' : raw.type;
  if (type !== 'select' && type !== 'delete') throw invalidQuery('type must be select or delete');
  const body: QueryBody = { type };
  // `data.<column>` names the column, as in `order` (data-prefix.ts); both the JS and the SQL path read body.where.
  const rawWhere = withoutDataPrefix(raw.where);
  const where = compileWhere(rawWhere, 'where');
  if (rawWhere !== undefined && rawWhere !== null) body.where = rawWhere as object;

  const limit = nonNegativeInteger(raw.limit, 'limit');
  const offset = nonNegativeInteger(raw.offset, 'offset');
  if (limit !== undefined) body.limit = limit;
  if (offset !== undefined) body.offset = offset;

  if (raw.order !== undefined && raw.order !== null) {
    if (!Array.isArray(raw.order)) throw invalidQuery(`order must be an array of [column, 'ASC' | 'DESC'] pairs`);
    body.order = raw.order.map((pair, i) => checkPair(pair, `order[${i}]`)) as [string, Direction][];
  }
  const order = compileOrder(body.order, 'order');

  const attributes = checkAttributes(raw.attributes, 'attributes');
  if (attributes) body.attributes = attributes;
  if (raw.includePagination !== undefined && raw.includePagination !== null) {
    if (typeof raw.includePagination !== 'boolean') throw invalidQuery('includePagination must be a boolean');
    body.includePagination = raw.includePagination;
  }
  if (raw.distinct !== undefined && raw.distinct !== null) {
    if (typeof raw.distinct !== 'boolean') throw invalidQuery('distinct must be a boolean');
    if (raw.distinct) body.distinct = true;
  }
  const joins = compileJoins(raw.join, 'join');
  if (joins.length > 0) body.join = raw.join as QueryBody['join'];
  if (raw.aggregate !== undefined && raw.aggregate !== null) {
    body.aggregate = checkPipeline(raw.aggregate, 'aggregate');
    if (joins.length > 0) throw invalidQuery('join cannot be combined with aggregate');
    if (attributes) throw invalidQuery('attributes cannot be combined with aggregate (use $project)');
    if (body.includePagination) throw invalidQuery('includePagination cannot be combined with aggregate');
    if (body.distinct) throw invalidQuery('distinct cannot be combined with aggregate (use $group)');
  }
  if (type === 'delete') {
    if (body.aggregate) throw invalidQuery('aggregate cannot be used with type delete');
    if (joins.length > 0) throw invalidQuery('join cannot be used with type delete');
    if (body.distinct) throw invalidQuery('distinct cannot be used with type delete');
    if (body.limit) throw invalidQuery('limit cannot be used with type delete: every entry matching where is deleted');
    if (body.offset) throw invalidQuery('offset cannot be used with type delete: every entry matching where is deleted');
  }
  return { body, where, order, projection: compileAttributes(attributes, 'attributes'), joins };
}

/** Checks a query body (throws HttpError 400 INVALID_QUERY naming the field) and returns it normalised. */
export function validateQuery(body: unknown): QueryBody {
  return compileQuery(body).body;
}
