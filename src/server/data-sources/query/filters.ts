import { DATE_UNITS, datePasses, isTimeUnit, operandAt, parseDate, type DateCheck, type DateCheckOp, type DateOperand, type DateUnit } from './dates.js';
import { invalidQuery, isPlainObject } from './errors.js';
import { compileDataPath, numericValue, textOf } from './values.js';

/**
 * `where.$filters`: `[{ column, condition, value }]`, all ANDed. Comparisons read numeric strings as numbers
 * when both sides are numeric; text comparisons of `==`, `!=`, `contains`, `notcontains` and `oneof` ignore
 * case. When the entry value is an array, `==`, `contains`, `oneof`, `>`…`<=` and `between` match if any
 * element matches (`!=` and `notcontains` are their negations). Date conditions: see dates.ts (UTC).
 */
export const FILTER_CONDITIONS = [
  '==',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
  'contains',
  'notcontains',
  'empty',
  'notempty',
  'between',
  'oneof',
  'dateis',
  'datebefore',
  'dateafter',
  'datebetween',
] as const;

type Data = Record<string, unknown>;
type ValueTest = (value: unknown) => boolean;

/** Text (lowercased) and number of an operand, prepared once. */
interface Operand {
  text: string | null;
  num: number;
}
const prepare = (value: unknown): Operand => ({ text: textOf(value)?.toLowerCase() ?? null, num: numericValue(value) });

const anyElement =
  (test: ValueTest): ValueTest =>
  (value) => {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) if (test(value[i])) return true;
      return false;
    }
    return test(value);
  };

function equalsTest(operand: Operand): ValueTest {
  if (operand.text === null) return (value) => value === null || value === undefined;
  return (value) => {
    if (value === null || value === undefined) return false;
    if (operand.num === operand.num) {
      const n = numericValue(value);
      if (n === n) return n === operand.num;
    }
    const text = textOf(value);
    return text !== null && text.toLowerCase() === operand.text;
  };
}

/** Sign of `value - operand` (numbers when both numeric, else text), or NaN when not comparable. */
function compareTo(operandValue: unknown): (value: unknown) => number {
  const num = numericValue(operandValue);
  const text = textOf(operandValue);
  return (value) => {
    if (value === null || value === undefined || text === null) return NaN;
    if (num === num) {
      const n = numericValue(value);
      if (n === n) return n < num ? -1 : n > num ? 1 : 0;
    }
    const t = textOf(value)!;
    return t < text ? -1 : t > text ? 1 : 0;
  };
}

const isEmpty = (value: unknown) => value === null || value === undefined || value === '' || (Array.isArray(value) && value.length === 0);

function scalarOperand(value: unknown, field: string): unknown {
  if (value === undefined) throw invalidQuery(`${field} is required`);
  if (value !== null && typeof value === 'object') throw invalidQuery(`${field} must be a string, number or boolean`);
  return value;
}

function dateOperand(value: unknown, field: string): DateOperand {
  const parsed = parseDate(value);
  if (!parsed) throw invalidQuery(`${field} must be a date (YYYY-MM-DD or YYYY-MM-DD HH:mm) or a time of day (HH:mm)`);
  return parsed;
}

function dateUnit(filter: Data, operand: DateOperand, field: string): DateUnit {
  if (filter.unit === undefined || filter.unit === null) return operand.unit;
  if (typeof filter.unit !== 'string' || !(DATE_UNITS as readonly string[]).includes(filter.unit)) {
    throw invalidQuery(`${field}.unit must be one of ${DATE_UNITS.join(', ')}`);
  }
  const unit = filter.unit as DateUnit;
  if (operand.kind === 'time' && !isTimeUnit(unit)) throw invalidQuery(`${field}.unit must be hour, minute or second for a time of day`);
  return unit;
}

/** `{ value }` or a bare value, as used by `datebetween`'s `from`/`to`. */
const boundValue = (bound: unknown) => (isPlainObject(bound) && 'value' in bound ? bound.value : bound);

/**
 * A date condition (`dateis`, `datebefore`, `dateafter`, `datebetween`) as the checks its value must all pass, each
 * sign of the value itself (dates.ts `datePasses`) (not of an array's elements); `time`: the operands are times of day. Throws a 400
 * on a bad operand. Also what sql/filters.ts translates.
 */
export function dateChecks(filter: Data, field: string): { time: boolean; checks: DateCheck[] } {
  const condition = filter.condition;
  const value = filter.value;
  const check = (operand: DateOperand, op: DateCheckOp): DateCheck => {
    const unit = dateUnit(filter, operand, field);
    return { unit, target: operandAt(operand, unit), op };
  };
  if (condition !== 'datebetween') {
    const operand = dateOperand(value, `${field}.value`);
    return { time: operand.kind === 'time', checks: [check(operand, condition === 'dateis' ? '=' : condition === 'datebefore' ? '<' : '>')] };
  }
  const range = isPlainObject(value) ? value : filter;
  const fromRaw = boundValue(range.from);
  const toRaw = boundValue(range.to);
  const hasFrom = fromRaw !== undefined && fromRaw !== null && fromRaw !== '';
  const hasTo = toRaw !== undefined && toRaw !== null && toRaw !== '';
  if (!hasFrom && !hasTo) throw invalidQuery(`${field} needs from: { value } and/or to: { value }`);
  const from = hasFrom ? dateOperand(fromRaw, `${field}.from.value`) : null;
  const to = hasTo ? dateOperand(toRaw, `${field}.to.value`) : null;
  if (from && to && from.kind !== to.kind) throw invalidQuery(`${field}: from and to must both be dates or both be times of day`);
  const checks: DateCheck[] = [];
  if (from) checks.push(check(from, '>='));
  if (to) checks.push(check(to, '<='));
  return { time: (from ?? to)!.kind === 'time', checks };
}

function compileCondition(filter: Data, field: string): ValueTest {
  const condition = filter.condition;
  const value = filter.value;
  switch (condition) {
    case '==':
      return anyElement(equalsTest(prepare(scalarOperand(value, `${field}.value`))));
    case '!=': {
      const eq = anyElement(equalsTest(prepare(scalarOperand(value, `${field}.value`))));
      return (v) => !eq(v);
    }
    case '>':
    case '>=':
    case '<':
    case '<=': {
      const cmp = compareTo(scalarOperand(value, `${field}.value`));
      const accept =
        condition === '>'
          ? (s: number) => s > 0
          : condition === '>='
            ? (s: number) => s >= 0
            : condition === '<'
              ? (s: number) => s < 0
              : (s: number) => s <= 0;
      return anyElement((v) => accept(cmp(v)));
    }
    case 'contains':
    case 'notcontains': {
      const needle = textOf(scalarOperand(value, `${field}.value`));
      if (needle === null) throw invalidQuery(`${field}.value must be a string`);
      const lower = needle.toLowerCase();
      const contains = anyElement((v) => {
        const text = textOf(v);
        return text !== null && text.toLowerCase().includes(lower);
      });
      return condition === 'contains' ? contains : (v) => !contains(v);
    }
    case 'empty':
      return isEmpty;
    case 'notempty':
      return (v) => !isEmpty(v);
    case 'between': {
      if (!isPlainObject(value)) throw invalidQuery(`${field}.value must be an object { from, to }`);
      const hasFrom = value.from !== undefined && value.from !== null && value.from !== '';
      const hasTo = value.to !== undefined && value.to !== null && value.to !== '';
      if (!hasFrom && !hasTo) throw invalidQuery(`${field}.value needs from or to`);
      const fromCmp = hasFrom ? compareTo(scalarOperand(value.from, `${field}.value.from`)) : null;
      const toCmp = hasTo ? compareTo(scalarOperand(value.to, `${field}.value.to`)) : null;
      return anyElement((v) => (fromCmp === null || fromCmp(v) >= 0) && (toCmp === null || toCmp(v) <= 0));
    }
    case 'oneof': {
      let options: unknown[];
      if (Array.isArray(value)) options = value;
      else if (typeof value === 'string')
        options = value
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
      else throw invalidQuery(`${field}.value must be an array or a comma-separated string`);
      const texts = new Set<string>();
      const numbers = new Set<number>();
      let matchesNull = false;
      options.forEach((option, i) => {
        const o = scalarOperand(option, `${field}.value[${i}]`);
        if (o === null) matchesNull = true;
        else {
          texts.add(textOf(o)!.toLowerCase());
          const n = numericValue(o);
          if (n === n) numbers.add(n);
        }
      });
      return anyElement((v) => {
        if (v === null || v === undefined) return matchesNull;
        const n = numericValue(v);
        if (n === n && numbers.has(n)) return true;
        const text = textOf(v);
        return text !== null && texts.has(text.toLowerCase());
      });
    }
    case 'dateis':
    case 'datebefore':
    case 'dateafter':
    case 'datebetween': {
      const { time, checks } = dateChecks(filter, field);
      return (v) => datePasses(v, time, checks);
    }
    default:
      throw invalidQuery(`${field}.condition must be one of ${FILTER_CONDITIONS.join(', ')}`);
  }
}

/** Compiles `where.$filters` once into one predicate over an entry's data (null when there are none). */
export function compileFilters(filters: unknown, field = 'where.$filters'): ((data: Data) => boolean) | null {
  if (filters === undefined || filters === null) return null;
  if (!Array.isArray(filters)) throw invalidQuery(`${field} must be an array`);
  if (filters.length === 0) return null;
  const tests = filters.map((filter, i) => {
    const at = `${field}[${i}]`;
    if (!isPlainObject(filter)) throw invalidQuery(`${at} must be an object { column, condition, value }`);
    if (typeof filter.column !== 'string' || filter.column === '') throw invalidQuery(`${at}.column must be a non-empty string`);
    if (typeof filter.condition !== 'string') throw invalidQuery(`${at}.condition must be a string`);
    // `data.<column>` is the column, as in `where`, `order` and `attributes`.
    const column = filter.column.startsWith('data.') && filter.column.length > 5 ? filter.column.slice(5) : filter.column;
    const get = compileDataPath(column);
    const test = compileCondition(filter, at);
    return (data: Data) => test(get(data));
  });
  if (tests.length === 1) return tests[0]!;
  return (data) => {
    for (let i = 0; i < tests.length; i++) if (!tests[i]!(data)) return false;
    return true;
  };
}
