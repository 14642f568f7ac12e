import { Aggregator } from 'mingo/aggregator';
import { Context, ProcessingMode, evalExpr } from 'mingo/core';
import * as accumulators from 'mingo/operators/accumulator';
import * as expressions from 'mingo/operators/expression';
import * as pipeline from 'mingo/operators/pipeline';
import * as projections from 'mingo/operators/projection';
import * as queries from 'mingo/operators/query';
import type { Options } from 'mingo/types';
import { AggregateBudget, activeBudget, withBudget, type AggregateLimits } from './budget.js';
import { asInvalidQuery, invalidQuery, isPlainObject } from './errors.js';
import { compileRegex } from '../../../filter/regex.js';
import { FilterError } from '../../../filter/errors.js';
import { $regex, $regexFind, $regexFindAll, $regexMatch, safeDateFromString } from './aggregate-regex.js';
import type { EntryRecord } from './types.js';
import { numericValue } from './values.js';

/**
 * `aggregate`: a mingo (MongoDB) pipeline over the entries matching `where`, each seen as
 * `{ id, dataSourceId, data, order, createdAt, updatedAt }`, so field paths are `$data.<column>`.
 * Only the stages and operators listed here are registered (mingo's Context is an allow-list; script
 * execution is off as well): nothing that runs code (`$function`, `$accumulator`, `$where`), reaches
 * other data (`$lookup`, `$unionWith`, `$graphLookup`, `$out`, `$merge`) or manufactures unbounded output
 * (`$range`, `$densify`). `$regex` and `$regexMatch`-style patterns run on RE2 (aggregate-regex.ts).
 *
 * Custom `$convertToNumber: <expression>`: numbers stay, numeric strings (`" 12.5 "`) become numbers,
 * everything else (non-numeric text, booleans, null, missing) becomes null, which `$sum`/`$avg` ignore.
 */
export const AGGREGATE_STAGES = [
  '$match',
  '$project',
  '$addFields',
  '$set',
  '$unset',
  '$group',
  '$sort',
  '$limit',
  '$skip',
  '$count',
  '$unwind',
  '$replaceRoot',
  '$replaceWith',
  '$sortByCount',
  '$bucket',
] as const;

export const AGGREGATE_ACCUMULATORS = [
  '$sum',
  '$avg',
  '$min',
  '$max',
  '$count',
  '$first',
  '$last',
  '$push',
  '$addToSet',
  '$stdDevPop',
  '$stdDevSamp',
  '$mergeObjects',
] as const;

const QUERY_OPERATORS = [
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$exists',
  '$regex',
  '$and',
  '$or',
  '$nor',
  '$not',
  '$mod',
  '$all',
  '$size',
  '$type',
  '$elemMatch',
  '$expr',
] as const;

/** Expression operators that are refused (everything else mingo offers is available). */
const REFUSED_EXPRESSIONS = new Set(['$function', '$range', '$toHashedIndexKey', '$rand', '$sampleRate']);
/** Keys refused anywhere in a pipeline, with the reason given to the caller. */
const FORBIDDEN_KEYS = new Set([
  '$function',
  '$accumulator',
  '$where',
  '$lookup',
  '$graphLookup',
  '$unionWith',
  '$out',
  '$merge',
  '$documents',
  '$jsonSchema',
  '$range',
  '$densify',
  '$facet',
  '$setWindowFields',
]);

type AnyFn = (...args: never[]) => unknown;
function pick<T extends Record<string, unknown>>(module: T, names: readonly string[]): Record<`$${string}`, AnyFn> {
  const out: Record<string, AnyFn> = {};
  for (const name of names) {
    const op = module[name];
    if (typeof op !== 'function') throw new Error(`mingo has no operator ${name}`);
    out[name] = op as AnyFn;
  }
  return out as Record<`$${string}`, AnyFn>;
}

/** `$convertToNumber`: string → number; anything non-numeric → null. */
export function convertToNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string') {
    const n = numericValue(value);
    return n === n && Number.isFinite(n) ? n : null;
  }
  return null;
}

const $convertToNumber = (obj: unknown, expr: unknown, options: Options) => {
  let value = evalExpr(obj as never, expr as never, options);
  if (Array.isArray(expr) && expr.length === 1 && Array.isArray(value)) value = value[0];
  return convertToNumber(value);
};

const expressionNames = Object.keys(expressions).filter((name) => name.startsWith('$') && !REFUSED_EXPRESSIONS.has(name));

type ExprOp = (obj: unknown, expr: unknown, options: Options) => unknown;
type StageOp = (coll: { map(f: (doc: unknown) => unknown): unknown }, expr: unknown, options: Options) => { map(f: (doc: unknown) => unknown): unknown };

/**
 * Operators that walk their inputs whole (deep comparison, hashing): their arguments are evaluated here first and
 * measured as trees (budget.ts), then handed to the operator as `$literal`s, so a value shared many times over
 * cannot make one call walk more than the budget.
 */
const WALKING = new Set([
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$cmp',
  '$in',
  '$indexOfArray',
  '$setUnion',
  '$setIntersection',
  '$setDifference',
  '$setEquals',
  '$setIsSubset',
  '$allElementsTrue',
  '$anyElementTrue',
]);
/** Stages that only pass documents through (nothing new to charge). */
const PASS_THROUGH = new Set(['$match', '$sort', '$skip', '$limit']);

/** Internal (never accepted from callers: not in KNOWN_KEYS): evaluates its expression and measures it as a tree. */
const TREE_CHECKED = '$__treeChecked';
const $__treeChecked: ExprOp = (obj, expr, options) => {
  const value = evalExpr(obj as never, expr as never, options);
  return activeBudget()?.checkTree(value, 'a $group key') ?? value;
};

/** The array `$concatArrays` would build from its evaluated arguments: measured (8 bytes an element) before it is. */
const concatenatedBytes = (args: unknown) => (Array.isArray(args) ? args.reduce((n: number, a) => n + (Array.isArray(a) ? 8 * a.length : 0), 16) : 0);

function budgetedExpression(name: string, op: ExprOp): ExprOp {
  if (name === '$literal') return op;
  if (name === '$concatArrays') {
    // Refused before the array is built: an array doubling (or growing eightfold) per level would otherwise reach
    // the budget's size once before it is charged, 200 ms and hundreds of MB for a 64 MB budget.
    return (obj, expr, options) => {
      const budget = activeBudget();
      if (!budget) return op(obj, expr, options);
      budget.tick();
      const args = evalExpr(obj as never, expr as never, options);
      budget.ensureRoom(concatenatedBytes(args), name);
      const literal = Array.isArray(expr) && Array.isArray(args) ? args.map((v) => ({ $literal: v })) : { $literal: args };
      return budget.charge(budget.checkTree(op(obj, literal, options), `the value of ${name}`), name);
    };
  }
  if (WALKING.has(name)) {
    return (obj, expr, options) => {
      const budget = activeBudget();
      if (!budget) return op(obj, expr, options);
      budget.tick();
      const args = budget.checkTree(evalExpr(obj as never, expr as never, options), `the arguments of ${name}`);
      const literal = Array.isArray(expr) && Array.isArray(args) ? args.map((v) => ({ $literal: v })) : { $literal: args };
      return budget.charge(budget.checkTree(op(obj, literal, options), `the value of ${name}`), name);
    };
  }
  return (obj, expr, options) => {
    const budget = activeBudget();
    if (!budget) return op(obj, expr, options);
    budget.tick();
    return budget.charge(budget.checkTree(op(obj, expr, options), `the value of ${name}`), name);
  };
}

function budgetedAccumulator(name: string, op: ExprOp): ExprOp {
  if (name === '$addToSet') {
    // unique() hashes every value: measure them as trees first.
    const push = accumulators.$push as unknown as ExprOp;
    return (coll, expr, options) => {
      const budget = activeBudget();
      if (!budget) return op(coll, expr, options);
      budget.tick();
      const values = budget.checkTree(push(coll, expr, options), 'the values of $addToSet') as unknown[];
      return budget.charge(budget.checkTree(op(values, '$$CURRENT', options), `the value of ${name}`), name);
    };
  }
  return (coll, expr, options) => {
    const budget = activeBudget();
    if (!budget) return op(coll, expr, options);
    budget.tick();
    return budget.charge(budget.checkTree(op(coll, expr, options), `the value of ${name}`), name);
  };
}

function budgetedStage(name: string, op: StageOp): StageOp {
  return (coll, expr, options) => {
    const budget = activeBudget();
    if (!budget) return op(coll, expr, options);
    let spec = expr;
    // Group keys are hashed: measured as trees.
    if (name === '$group' && isPlainObject(expr) && Object.hasOwn(expr, '_id')) spec = { ...expr, _id: { [TREE_CHECKED]: expr._id } };
    if (name === '$sortByCount') spec = { [TREE_CHECKED]: expr };
    const out = op(coll, spec, options);
    if (PASS_THROUGH.has(name)) return out;
    return out.map((doc) => {
      budget.tick();
      return budget.charge(budget.checkTree(doc, `a document of ${name}`), name);
    }) as ReturnType<StageOp>;
  };
}

function wrapAll<T>(ops: Record<string, AnyFn>, wrap: (name: string, op: T) => T): Record<string, T> {
  const out: Record<string, T> = {};
  for (const name of Object.keys(ops)) out[name] = wrap(name, ops[name] as unknown as T);
  return out;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const context = Context.init({
  pipeline: wrapAll(pick(pipeline, AGGREGATE_STAGES), budgetedStage) as any,
  accumulator: wrapAll(pick(accumulators, AGGREGATE_ACCUMULATORS), budgetedAccumulator) as any,
  expression: {
    ...wrapAll(
      {
        ...pick(expressions, expressionNames),
        $convertToNumber: $convertToNumber as AnyFn,
        $dateFromString: safeDateFromString(expressions.$dateFromString as unknown as ExprOp) as AnyFn,
        ...({ $regexMatch, $regexFind, $regexFindAll } as Record<string, AnyFn>),
      },
      budgetedExpression,
    ),
    [TREE_CHECKED]: $__treeChecked,
  } as any,
  query: { ...pick(queries, QUERY_OPERATORS), $regex } as any,
  projection: pick(projections, ['$elemMatch', '$slice']) as any,
});
/* eslint-enable @typescript-eslint/no-explicit-any */

const REGEX_EXPRESSIONS = new Set(['$regexMatch', '$regexFind', '$regexFindAll']);
/** Every `$key` a pipeline may contain (mingo refuses the rest too, but this names the field). */
const KNOWN_KEYS = new Set<string>([
  ...AGGREGATE_STAGES,
  ...AGGREGATE_ACCUMULATORS,
  ...QUERY_OPERATORS,
  ...expressionNames,
  '$convertToNumber',
  '$options',
  '$elemMatch',
  '$slice',
]);

function checkNode(node: unknown, path: string): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => checkNode(item, `${path}[${i}]`));
    return;
  }
  if (!isPlainObject(node)) return;
  for (const key of Object.keys(node)) {
    const at = `${path}.${key}`;
    if (FORBIDDEN_KEYS.has(key)) throw invalidQuery(`${at}: ${key} is not allowed in aggregate`);
    if (key.startsWith('$') && !KNOWN_KEYS.has(key)) throw invalidQuery(`${at}: unknown or unsupported operator ${key}`);
    const value = node[key];
    try {
      if (key === '$regex') compileRegex(value, node.$options, at);
      // A literal pattern is checked now; a `$field` or expression pattern when it is evaluated.
      if (REGEX_EXPRESSIONS.has(key) && isPlainObject(value) && typeof value.regex === 'string' && !value.regex.startsWith('$')) {
        compileRegex(value.regex, value.options, `${at}.regex`);
      }
    } catch (error) {
      throw error instanceof FilterError ? invalidQuery(error.message) : error;
    }
    checkNode(value, at);
  }
}

/** Checks the shape of a pipeline: an array of single-stage objects from AGGREGATE_STAGES, nothing forbidden. */
export function checkPipeline(aggregate: unknown, field = 'aggregate'): object[] {
  if (!Array.isArray(aggregate)) throw invalidQuery(`${field} must be an array of pipeline stages`);
  aggregate.forEach((stage, i) => {
    const at = `${field}[${i}]`;
    if (!isPlainObject(stage)) throw invalidQuery(`${at} must be an object such as { $group: … }`);
    const keys = Object.keys(stage);
    if (keys.length !== 1) throw invalidQuery(`${at} must hold exactly one stage`);
    if (!(AGGREGATE_STAGES as readonly string[]).includes(keys[0]!)) {
      throw invalidQuery(`${at}: stage ${keys[0]} is not allowed (allowed: ${AGGREGATE_STAGES.join(' ')})`);
    }
    checkNode(stage, at);
  });
  return aggregate as object[];
}

/**
 * A deep copy of JSON data that keeps every key an own property (`__proto__` too, as JSON.parse made it). As fast
 * as mingo's own clone; structuredClone took 1.5x as long on 100,000 entries.
 */
function cloneJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(cloneJson);
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = cloneJson((value as Record<string, unknown>)[key]);
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, writable: true, enumerable: true, configurable: true });
    else copy[key] = item;
  }
  return copy;
}

/** The budget of a run when none is given (the server passes limits.aggregateBytes / aggregateTimeoutMs). */
export const DEFAULT_AGGREGATE_LIMITS: AggregateLimits = { bytes: 64 * 1024 * 1024, timeoutMs: 5000 };

/**
 * Runs the pipeline over `entries` (cloned first, so stages never change stored data) under a memory and time
 * budget (budget.ts): past it 422 AGGREGATE_TOO_LARGE or QUERY_TIMEOUT.
 */
export function runAggregate(
  entries: readonly EntryRecord[],
  aggregate: unknown,
  field = 'aggregate',
  limits: AggregateLimits = DEFAULT_AGGREGATE_LIMITS,
): unknown[] {
  const stages = checkPipeline(aggregate, field);
  const budget = new AggregateBudget(limits);
  return asInvalidQuery(field, () =>
    withBudget(budget, () => {
      // Cloned here, not by mingo: its clone assigns keys, so an own `__proto__` key (JSON.parse keeps one) became
      // the copy's prototype and `$data.at` read it (found by review).
      const aggregator = new Aggregator(stages as never, {
        context,
        scriptEnabled: false,
        processingMode: ProcessingMode.CLONE_OFF,
        collectionResolver: () => [],
      });
      return budget.checkTree(aggregator.run(entries.map(cloneJson) as never) as unknown[], 'the result');
    }),
  );
}
