/**
 * Cron occurrences in a time zone, with explicit DST rules:
 * - a wall time inside a spring-forward gap runs at the first instant after the gap;
 * - a wall time inside a repeated (fall-back) hour runs once, at its first occurrence.
 *
 * cron-parser is used in UTC only, as a generator of matching *wall-clock*
 * times (UTC has no DST); each wall time is then resolved in the zone here.
 */
import { CronExpressionParser } from 'cron-parser';
import { cronSyntaxError } from '../../actions/validate.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Wall-clock time of `instant` in `zone`, as ms of the same wall time in UTC. */
export function wallTime(instant: number, zone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(new Date(instant))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const ms = instant - Math.floor(instant / 1000) * 1000;
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) + ms;
}

/** UTC offset of `zone` at `instant`, ms (wall − UTC). */
export const offsetAt = (instant: number, zone: string): number => wallTime(instant, zone) - instant;

/**
 * The instant a wall time runs at: its only instant, the first of two in a
 * repeated hour, or the end of the gap when the wall time does not exist.
 */
export function resolveWallTime(wall: number, zone: string): number {
  const before = offsetAt(wall - DAY, zone);
  const after = offsetAt(wall + DAY, zone);
  const candidates = [...new Set([before, after])]
    .map((offset) => wall - offset)
    .filter((instant) => offsetAt(instant, zone) === wall - instant)
    .sort((a, b) => a - b);
  if (candidates.length) return candidates[0]!;
  // In a gap: find the transition instant (first instant carrying the new offset).
  let lo = wall - Math.max(before, after);
  let hi = wall - Math.min(before, after);
  if (lo > hi) [lo, hi] = [hi, lo];
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAt(mid, zone) === after) hi = mid;
    else lo = mid;
  }
  return Math.ceil(hi / 1000) * 1000;
}

/** cron-parser's verdict on an expression, or undefined when it is valid (five fields only). */
export function cronError(expression: string): string | undefined {
  const syntax = cronSyntaxError(expression);
  if (syntax) return syntax;
  try {
    CronExpressionParser.parse(expression, { tz: 'UTC' });
    return undefined;
  } catch (error) {
    return `is not a valid cron expression: ${(error as Error).message}`;
  }
}

/** The first occurrence strictly after `after` (ms), or null when the expression never fires again. */
export function nextOccurrence(expression: string, zone: string, after: number): number | null {
  // Start two hours of wall time early: a repeated hour can put earlier wall times after `after`.
  const start = wallTime(after, zone) - 2 * 60 * MINUTE;
  const it = CronExpressionParser.parse(expression, { tz: 'UTC', currentDate: new Date(start) });
  for (let i = 0; i < 10_000; i++) {
    let wall: number;
    try {
      wall = it.next().getTime();
    } catch {
      return null;
    }
    const instant = resolveWallTime(wall, zone);
    if (instant > after) return instant;
  }
  return null;
}

/**
 * Occurrences due at `now` given the stored next one: the latest due instant
 * and how many were due (more than one means some were missed).
 */
export function dueOccurrences(expression: string, zone: string, firstDue: number, now: number): { latest: number; count: number; next: number | null } {
  let latest = firstDue;
  let count = 1;
  let next = nextOccurrence(expression, zone, latest);
  while (next !== null && next <= now && count < 100_000) {
    latest = next;
    count++;
    next = nextOccurrence(expression, zone, latest);
  }
  return { latest, count, next };
}
