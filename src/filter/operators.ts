/**
 * The one operator allow-list of every filter, and the check that walks a filter before anything compiles
 * it, so a refusal names the exact path (`where.age.$mod`). Anything not listed, `$where` above all (it
 * would run code), is refused.
 */
import { FilterError, isPlainObject } from './errors.js';
import { MAX_PATTERN_LENGTH, compileRegex } from './regex.js';

export const FILTER_OPERATORS = [
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
  '$options',
  '$and',
  '$or',
  '$nor',
  '$not',
  '$mod',
  '$all',
  '$size',
  '$type',
  '$elemMatch',
  '$like',
  '$iLike',
] as const;

/** Keys (fields and operators) a filter may hold in all, so matching one document stays cheap. */
export const MAX_FILTER_CONDITIONS = 1000;
/** Values of one `$in`, `$nin` or `$all` list. */
export const MAX_FILTER_LIST = 10_000;

/** Values `$type` accepts. */
export const TYPE_ALIASES = ['number', 'string', 'bool', 'array', 'null'] as const;

const CODE_RUNNING = new Set(['$where', '$function', '$accumulator']);
const ALLOWED = new Set<string>(FILTER_OPERATORS);

function checkOperator(key: string, value: unknown, node: Record<string, unknown>, at: string): void {
  switch (key) {
    case '$regex':
      compileRegex(value, node.$options, at);
      break;
    case '$options':
      if (!('$regex' in node)) throw new FilterError(`${at} is only valid beside $regex`);
      break;
    case '$like':
    case '$iLike':
      if (typeof value !== 'string' && typeof value !== 'number') throw new FilterError(`${at} must be a string`);
      if (String(value).length > MAX_PATTERN_LENGTH) throw new FilterError(`${at} is longer than ${MAX_PATTERN_LENGTH} characters`);
      break;
    case '$in':
    case '$nin':
    case '$all':
      if (!Array.isArray(value)) throw new FilterError(`${at} must be an array`);
      if (value.length > MAX_FILTER_LIST) throw new FilterError(`${at} holds ${value.length} values, more than ${MAX_FILTER_LIST}`);
      break;
    case '$and':
    case '$or':
    case '$nor':
      if (!Array.isArray(value) || value.length === 0) throw new FilterError(`${at} must be a non-empty array of queries`);
      break;
    case '$mod':
      if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'number' || typeof value[1] !== 'number' || value[0] === 0) {
        throw new FilterError(`${at} must be [divisor (non-zero number), remainder]`);
      }
      break;
    case '$size':
      if (typeof value !== 'number') throw new FilterError(`${at} must be a number`);
      break;
    case '$type':
      if (typeof value !== 'string' || !(TYPE_ALIASES as readonly string[]).includes(value)) {
        throw new FilterError(`${at} must be one of ${TYPE_ALIASES.join(', ')}`);
      }
      break;
    case '$elemMatch':
    case '$not':
      if (!isPlainObject(value)) throw new FilterError(`${at} must be an object`);
      break;
  }
}

/**
 * Walks a filter and throws FilterError at the first operator that is not allowed or malformed, or when the
 * filter holds more than MAX_FILTER_CONDITIONS keys in all.
 */
export function checkFilter(node: unknown, path: string, count = { keys: 0 }): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => checkFilter(item, `${path}[${i}]`, count));
    return;
  }
  if (!isPlainObject(node)) return;
  for (const key of Object.keys(node)) {
    if (++count.keys > MAX_FILTER_CONDITIONS)
      throw new FilterError(`${path}: a filter holds at most ${MAX_FILTER_CONDITIONS} conditions (fields and operators)`);
    const value = node[key];
    const at = `${path}.${key}`;
    if (key.startsWith('$')) {
      if (CODE_RUNNING.has(key)) throw new FilterError(`${at}: operator ${key} is not allowed (it would run code)`);
      if (!ALLOWED.has(key)) throw new FilterError(`${at}: operator ${key} is not allowed (allowed: ${FILTER_OPERATORS.join(' ')})`);
      checkOperator(key, value, node, at);
    }
    checkFilter(value, at, count);
  }
}
