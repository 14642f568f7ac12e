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

function validDay(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
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

export function truncateInstant(ms: number, unit: DateUnit): number {
  const step = UNIT_MS[unit];
  if (step) return Math.floor(ms / step) * step;
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
  if (!parsed) return null;
  if (operand.kind === 'time') {
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

/**
 * The sign of `value` − `target` at `unit` precision for a date condition (`time`: the operand is a time of day),
 * or null when the value is not a date (comparableDate). A value or target out of Date's range (NaN) gives 0, as
 * the comparisons of filters.ts do. Also the SQL function of SQLite (db/sqlite-functions.ts), so both read alike.
 */
export function dateSign(value: unknown, time: boolean, unit: DateUnit, target: number): number | null {
  const operand: DateOperand = time ? { kind: 'time', seconds: 0, unit } : { kind: 'instant', ms: 0, unit, hasTime: true };
  const at = comparableDate(value, operand, unit);
  return at === null ? null : at < target ? -1 : at > target ? 1 : 0;
}
