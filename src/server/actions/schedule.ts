/**
 * Cron occurrences in a time zone, with explicit DST rules:
 * - a wall time inside a spring-forward gap runs at the first instant after the gap;
 * - a wall time inside a repeated (fall-back) hour runs once, at its first occurrence.
 *
 * cron-parser is used in UTC only, as a generator of matching *wall-clock*
 * times (UTC has no DST); each wall time is then resolved in the zone here.
 */
import { CronExpressionParser } from 'cron-parser';
import { cronSyntaxError } from '../../contract/action-validate.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
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
  const start = wallTime(after, zone) - 2 * HOUR;
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
 * Matching wall times (UTC ms of the wall clock) strictly after `start`, in
 * order. cron-parser finds the next matching day; the rest of that day's
 * times come from the hour and minute fields (in a five-field expression they
 * do not depend on the day), so a minutely catch-up costs one cron-parser step
 * per day instead of one per minute.
 */
function* matchingWalls(expression: string, start: number): Generator<number, void> {
  const it = CronExpressionParser.parse(expression, { tz: 'UTC', currentDate: new Date(start) });
  const hours = [...new Set(it.fields.hour.values as number[])].sort((a, b) => a - b);
  const minutes = [...new Set(it.fields.minute.values as number[])].sort((a, b) => a - b);
  const times = hours.flatMap((h) => minutes.map((m) => h * HOUR + m * MINUTE));
  for (;;) {
    let wall: number;
    try {
      wall = it.next().getTime();
    } catch {
      return;
    }
    yield wall;
    const day = wall - (((wall % DAY) + DAY) % DAY);
    const at = times.indexOf(wall - day);
    if (at < 0) continue; // not expected; stay with cron-parser, one match at a time
    for (let i = at + 1; i < times.length; i++) yield day + times[i]!;
    it.reset(new Date(day + DAY - 1000)); // next match is on a later day
  }
}

/**
 * `resolveWallTime` for increasing wall times in one zone, without its Intl
 * work while the zone's offset is steady: when hourly samples show one offset
 * over [wall − 1 day, wall + 1 day] (every instant resolveWallTime would look
 * at), the answer is `wall − offset`, exactly what resolveWallTime returns
 * there. Near an offset change it calls resolveWallTime itself. Assumes the
 * offset never changes and changes back within one hour.
 */
function steadyResolver(zone: string): (wall: number) => number {
  // A run of grid samples [from, to] (multiples of an hour) all carrying `offset`;
  // `changed`: the sample before `from` carries another offset.
  let from = 0;
  let to = -1;
  let offset = 0;
  let changed = false;
  return (wall) => {
    const lo = Math.floor((wall - DAY) / HOUR);
    const hi = Math.ceil((wall + DAY) / HOUR);
    if (lo < from && changed && from <= hi) return resolveWallTime(wall, zone); // the change lies inside
    if (lo < from || lo > to) {
      from = to = lo;
      offset = offsetAt(lo * HOUR, zone);
      changed = false;
    }
    while (to < hi) {
      to++;
      const o = offsetAt(to * HOUR, zone);
      if (o !== offset) {
        from = to;
        offset = o;
        changed = true;
      }
    }
    return from <= lo ? wall - offset : resolveWallTime(wall, zone);
  };
}

/**
 * The occurrences strictly after `after`, in order: the instants that calling
 * nextOccurrence again and again, each time from the previous result, yields,
 * but from one forward walk over the matching wall times (nextOccurrence
 * restarts two hours of wall time early and resolves every match in them, each
 * time). A wall time resolving to an instant not after the last one (a repeated
 * hour, or a gap collapsing several times into one instant) yields nothing.
 */
export function* occurrencesAfter(expression: string, zone: string, after: number): Generator<number, void> {
  const resolve = steadyResolver(zone);
  let last = after;
  let passed = 0; // like nextOccurrence's 10,000-match limit
  for (const wall of matchingWalls(expression, wallTime(after, zone) - 2 * HOUR)) {
    const instant = resolve(wall);
    if (instant > last) {
      yield instant;
      last = instant;
      passed = 0;
    } else if (++passed >= 10_000) return;
  }
}

/**
 * Occurrences due at `now` given the stored next one: the latest due instant
 * and how many were due (more than one means some were missed). Same results
 * as stepping with nextOccurrence, in time linear in the number of due
 * occurrences (a day of minutely ones takes milliseconds).
 */
export function dueOccurrences(expression: string, zone: string, firstDue: number, now: number): { latest: number; count: number; next: number | null } {
  let latest = firstDue;
  let count = 1;
  for (const instant of occurrencesAfter(expression, zone, firstDue)) {
    if (instant > now || count >= 100_000) return { latest, count, next: instant };
    latest = instant;
    count++;
  }
  return { latest, count, next: null };
}
