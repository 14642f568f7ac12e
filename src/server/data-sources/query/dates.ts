/**
 * Dates of `$filters` date conditions. Everything is UTC: a value without a zone (`2024-03-01`,
 * `2024-03-01 10:30`) is read as UTC, one with `Z` or `+hh:mm` is converted to UTC, and calendar units
 * (day, month, …) and times of day are taken in UTC.
 */

export const DATE_UNITS = ['year', 'month', 'day', 'hour', 'minute', 'second'] as const;
export type DateUnit = (typeof DATE_UNITS)[number];

/** A point in time (precision `unit`), or a time of day in seconds since midnight. */
export type DateOperand = { kind: 'instant'; ms: number; unit: DateUnit; hasTime: boolean } | { kind: 'time'; seconds: number; unit: DateUnit };

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;
const TIME_ONLY = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/;

/** Whether day `d` of month `m` (1–12) of year `y` exists, as `new Date(Date.UTC(y, m, 0)).getUTCDate()` says (years 0–99 are 1900–1999 there). */
function validDay(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const year = y >= 0 && y <= 99 ? 1900 + y : y;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return d <= (m === 2 ? (leap ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31);
}

/** Reads `YYYY-MM-DD`, `YYYY-MM-DD HH:mm[:ss[.sss]][Z|±hh:mm]` (also with `T`), `HH:mm[:ss]`, or epoch ms. */
export function parseDate(value: unknown): DateOperand | null {
  if (typeof value === 'number') return Number.isFinite(value) ? { kind: 'instant', ms: value, unit: 'second', hasTime: true } : null;
  if (typeof value !== 'string') return null;
  const text = value.trim();
  let m = DATE_ONLY.exec(text);
  if (m) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    return validDay(y, mo, d) ? { kind: 'instant', ms: Date.UTC(y, mo - 1, d), unit: 'day', hasTime: false } : null;
  }
  m = DATE_TIME.exec(text);
  if (m) {
    const [y, mo, d, h, mi] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])];
    const s = m[6] === undefined ? 0 : Number(m[6]);
    if (!validDay(y, mo, d) || h > 23 || mi > 59 || s > 59) return null;
    const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
    let ms = Date.UTC(y, mo - 1, d, h, mi, s, fraction);
    const zone = m[8];
    if (zone && zone.toUpperCase() !== 'Z') {
      const sign = zone[0] === '-' ? -1 : 1;
      const digits = zone.slice(1).replace(':', '');
      const offsetMinutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2));
      ms -= sign * offsetMinutes * 60_000;
    }
    return { kind: 'instant', ms, unit: m[6] === undefined ? 'minute' : 'second', hasTime: true };
  }
  m = TIME_ONLY.exec(text);
  if (m) {
    const [h, mi] = [Number(m[1]), Number(m[2])];
    const s = m[3] === undefined ? 0 : Number(m[3]);
    if (h > 23 || mi > 59 || s > 59) return null;
    return { kind: 'time', seconds: h * 3600 + mi * 60 + s, unit: m[3] === undefined ? 'minute' : 'second' };
  }
  return null;
}

const UNIT_MS: Partial<Record<DateUnit, number>> = { hour: 3_600_000, minute: 60_000, second: 1000 };
const UNIT_SECONDS: Partial<Record<DateUnit, number>> = { hour: 3600, minute: 60, second: 1 };

/** Date.UTC(100, 0, 1): from there up to Date's end a day is truncated without a Date (years 0–99 are read as 1900–1999 by Date.UTC). */
const YEAR_100 = -59_011_459_200_000;
const DAY_MS = 86_400_000;

export function truncateInstant(ms: number, unit: DateUnit): number {
  const step = UNIT_MS[unit];
  if (step) return Math.floor(ms / step) * step;
  // new Date(ms) truncates a fraction; its day starts at a multiple of 86,400,000 ms.
  if (unit === 'day' && ms >= YEAR_100 && ms <= 8.64e15) return Math.floor(Math.trunc(ms) / DAY_MS) * DAY_MS;
  const d = new Date(ms);
  if (unit === 'year') return Date.UTC(d.getUTCFullYear(), 0, 1);
  if (unit === 'month') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
}

export function truncateTime(seconds: number, unit: DateUnit): number {
  const step = UNIT_SECONDS[unit] ?? 1;
  return Math.floor(seconds / step) * step;
}

export const isTimeUnit = (unit: DateUnit) => unit === 'hour' || unit === 'minute' || unit === 'second';

/**
 * Maps an entry value to a number comparable with `operand` at `unit` precision, or null when the value
 * is not a date (or has no time of day while the operand is a time).
 */
export function comparableDate(value: unknown, operand: DateOperand, unit: DateUnit): number | null {
  const parsed = parseDate(value);
  return parsed && comparableParsed(parsed, operand.kind === 'time', unit);
}

/** comparableDate of a value parseDate read (`time`: the operand is a time of day). */
function comparableParsed(parsed: DateOperand, time: boolean, unit: DateUnit): number | null {
  if (time) {
    if (parsed.kind === 'time') return truncateTime(parsed.seconds, unit);
    if (!parsed.hasTime) return null;
    const msOfDay = ((parsed.ms % 86_400_000) + 86_400_000) % 86_400_000;
    return truncateTime(Math.floor(msOfDay / 1000), unit);
  }
  if (parsed.kind === 'time') return null;
  return truncateInstant(parsed.ms, unit);
}

/** The operand itself at `unit` precision. */
export const operandAt = (operand: DateOperand, unit: DateUnit) =>
  operand.kind === 'time' ? truncateTime(operand.seconds, unit) : truncateInstant(operand.ms, unit);

/** The sign of an entry's date − a check's target; a NaN (out of Date's range) on either side gives 0, as comparisons do. */
const signOf = (at: number, target: number) => (at < target ? -1 : at > target ? 1 : 0);

/** How a date check compares: the sign of entry − operand it accepts. */
export type DateCheckOp = '=' | '<' | '>' | '>=' | '<=';
const SIGN_ACCEPTS: Record<DateCheckOp, (sign: number) => boolean> = {
  '=': (s) => s === 0,
  '<': (s) => s < 0,
  '>': (s) => s > 0,
  '>=': (s) => s >= 0,
  '<=': (s) => s <= 0,
};

/** One comparison of a date condition: the entry at `unit` precision against `target` (the operand at that precision). */
export interface DateCheck {
  unit: DateUnit;
  target: number;
  op: DateCheckOp;
}

/**
 * Whether `value` passes every check (each sign of entry − target accepted by its op); the value is read once. False when it is
 * not a date. Also the SQL function of SQLite (db/sqlite-functions.ts), so both read alike.
 */
export function datePasses(value: unknown, time: boolean, checks: readonly DateCheck[]): boolean {
  const parsed = parseDate(value);
  if (!parsed) return false;
  for (const check of checks) {
    const at = comparableParsed(parsed, time, check.unit);
    if (at === null || !SIGN_ACCEPTS[check.op](signOf(at, check.target))) return false;
  }
  return true;
}
