import { describe, expect, it } from 'vitest';
import { cronError, dueOccurrences, nextOccurrence, occurrencesAfter, offsetAt } from '../../src/server/actions/schedule.js';

function seq(expr: string, zone: string, start: string, n: number): string[] {
  let t = Date.parse(start);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const x = nextOccurrence(expr, zone, t)!;
    out.push(new Date(x).toISOString());
    t = x;
  }
  return out;
}

describe('cron occurrences in a time zone (DST rules)', () => {
  it('America/New_York: a gap time runs right after the gap; a repeated time runs once', () => {
    expect(seq('30 2 * * *', 'America/New_York', '2025-03-08T12:00:00Z', 2)).toEqual(['2025-03-09T07:00:00.000Z', '2025-03-10T06:30:00.000Z']);
    expect(seq('30 1 * * *', 'America/New_York', '2025-11-01T12:00:00Z', 2)).toEqual(['2025-11-02T05:30:00.000Z', '2025-11-03T06:30:00.000Z']);
    // Every 30 min across the fall-back: 01:00 and 01:30 fire once, then 02:00 EST.
    expect(seq('*/30 * * * *', 'America/New_York', '2025-11-02T04:45:00Z', 5)).toEqual([
      '2025-11-02T05:00:00.000Z',
      '2025-11-02T05:30:00.000Z',
      '2025-11-02T07:00:00.000Z',
      '2025-11-02T07:30:00.000Z',
      '2025-11-02T08:00:00.000Z',
    ]);
    // Every 30 min across the spring-forward: 02:00 and 02:30 collapse into 03:00 EDT.
    expect(seq('*/30 * * * *', 'America/New_York', '2025-03-09T06:15:00Z', 4)).toEqual([
      '2025-03-09T06:30:00.000Z',
      '2025-03-09T07:00:00.000Z',
      '2025-03-09T07:30:00.000Z',
      '2025-03-09T08:00:00.000Z',
    ]);
  });

  it('Europe/Dublin', () => {
    expect(seq('30 1 * * *', 'Europe/Dublin', '2025-03-29T12:00:00Z', 2)).toEqual(['2025-03-30T01:00:00.000Z', '2025-03-31T00:30:00.000Z']);
    expect(seq('30 1 * * *', 'Europe/Dublin', '2025-10-25T12:00:00Z', 2)).toEqual(['2025-10-26T00:30:00.000Z', '2025-10-27T01:30:00.000Z']);
  });

  it('Europe/Berlin', () => {
    expect(seq('0 2 * * *', 'Europe/Berlin', '2025-03-29T12:00:00Z', 2)).toEqual(['2025-03-30T01:00:00.000Z', '2025-03-31T00:00:00.000Z']);
    expect(seq('30 2 * * *', 'Europe/Berlin', '2025-10-25T12:00:00Z', 2)).toEqual(['2025-10-26T00:30:00.000Z', '2025-10-27T01:30:00.000Z']);
  });

  it('Australia/Melbourne (southern hemisphere)', () => {
    expect(seq('30 2 * * *', 'Australia/Melbourne', '2025-10-04T12:00:00Z', 2)).toEqual(['2025-10-04T16:00:00.000Z', '2025-10-05T15:30:00.000Z']);
    expect(seq('30 2 * * *', 'Australia/Melbourne', '2025-04-05T12:00:00Z', 2)).toEqual(['2025-04-05T15:30:00.000Z', '2025-04-06T16:30:00.000Z']);
  });

  it('America/Santiago (transition at midnight)', () => {
    expect(seq('0 0 * * *', 'America/Santiago', '2025-09-05T12:00:00Z', 3)).toEqual([
      '2025-09-06T04:00:00.000Z',
      '2025-09-07T04:00:00.000Z',
      '2025-09-08T03:00:00.000Z',
    ]);
    expect(seq('30 23 * * *', 'America/Santiago', '2026-04-03T12:00:00Z', 3)).toEqual([
      '2026-04-04T02:30:00.000Z',
      '2026-04-05T02:30:00.000Z',
      '2026-04-06T03:30:00.000Z',
    ]);
  });

  it('counts missed occurrences from the stored next one', () => {
    const first = Date.parse('2025-01-01T10:00:00Z');
    const due = dueOccurrences('0 * * * *', 'UTC', first, Date.parse('2025-01-01T13:20:00Z'));
    expect(due).toEqual({ latest: Date.parse('2025-01-01T13:00:00Z'), count: 4, next: Date.parse('2025-01-01T14:00:00Z') });
  });

  it('refuses cron expressions that are not five valid fields', () => {
    expect(cronError('*/5 * * * *')).toBeUndefined();
    expect(cronError('* * * *')).toMatch(/five-field/);
    expect(cronError('0 0 * * * *')).toMatch(/five-field/);
    expect(cronError('61 * * * *')).toMatch(/outside 0-59/);
    expect(cronError('0 0 31 2 *')).toBeTypeOf('string');
  });
});

const HOUR = 3_600_000;
const DAY = 86_400_000;
const ZONES = ['America/New_York', 'Europe/Dublin', 'Europe/Berlin', 'Australia/Melbourne', 'America/Santiago'];

/** The reference: stepping with nextOccurrence, as dueOccurrences did before its one-walk rewrite. */
function slowDue(expression: string, zone: string, firstDue: number, now: number): { latest: number; count: number; next: number | null } {
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

/** Instants after `from` up to the first one past `until`, by nextOccurrence (slow) and by occurrencesAfter (one walk). */
function slowRange(expression: string, zone: string, from: number, until: number): number[] {
  const out: number[] = [];
  for (let t: number | null = from; t !== null && t <= until; ) out.push((t = nextOccurrence(expression, zone, t))!);
  return out;
}
function fastRange(expression: string, zone: string, from: number, until: number): number[] {
  const out: number[] = [];
  for (const t of occurrencesAfter(expression, zone, from)) {
    out.push(t);
    if (t > until) break;
  }
  return out;
}

/** Hours (instants) at which `zone` carries a new offset, within (from, until]. */
function transitions(zone: string, from: number, until: number): number[] {
  const out: number[] = [];
  for (let t = from, offset = offsetAt(t, zone); t < until; t += HOUR) {
    const o = offsetAt(t + HOUR, zone);
    if (o !== offset) out.push(t + HOUR);
    offset = o;
  }
  return out;
}

const iso = (ts: number[]) => ts.map((t) => new Date(t).toISOString());

describe('dueOccurrences walks forward once: same instants as stepping with nextOccurrence', () => {
  // March to November 2025 holds both transitions of each zone (Santiago: April and September).
  const from = Date.parse('2025-03-01T00:00:00Z');
  const until = Date.parse('2025-12-01T00:00:00Z');
  const changes = new Map(ZONES.map((zone) => [zone, transitions(zone, from, until)]));

  it('finds the DST transitions it compares across (two in each zone)', () => {
    for (const zone of ZONES) expect(changes.get(zone)!.length, zone).toBe(2);
  });

  it('daily times around the transition hours, over nine months in five zones', () => {
    for (const zone of ZONES)
      for (const cron of ['30 2 * * *', '30 1 * * *', '0 0 * * *', '30 23 * * *'])
        expect(iso(fastRange(cron, zone, from, until)), `${zone} ${cron}`).toEqual(iso(slowRange(cron, zone, from, until)));
  });

  it('hourly, quarter-hourly and other times over the two days around every transition', () => {
    for (const zone of ZONES)
      for (const t of changes.get(zone)!)
        for (const cron of ['0 * * * *', '*/15 * * * *', '45 */2 * * *', '10,50 0-3 * * *'])
          expect(iso(fastRange(cron, zone, t - DAY, t + DAY)), `${zone} ${cron} at ${new Date(t).toISOString()}`).toEqual(
            iso(slowRange(cron, zone, t - DAY, t + DAY)),
          );
  });

  it('every minute across the transitions in Berlin and Santiago', () => {
    for (const zone of ['Europe/Berlin', 'America/Santiago'])
      for (const t of changes.get(zone)!)
        expect(iso(fastRange('* * * * *', zone, t - 40 * 60_000, t + 40 * 60_000)), `${zone} at ${new Date(t).toISOString()}`).toEqual(
          iso(slowRange('* * * * *', zone, t - 40 * 60_000, t + 40 * 60_000)),
        );
  });

  it('latest, count and next from stored instants in, before and after a gap or a repeated hour', () => {
    for (const zone of ZONES)
      for (const t of changes.get(zone)!)
        for (const cron of ['*/30 * * * *', '30 2 * * *'])
          for (let firstDue = t - 3 * HOUR; firstDue <= t + 3 * HOUR; firstDue += 30 * 60_000)
            for (const now of [firstDue, firstDue + 20 * 60_000, firstDue + 5 * HOUR, firstDue + DAY])
              expect(dueOccurrences(cron, zone, firstDue, now), `${zone} ${cron} ${new Date(firstDue).toISOString()} → ${new Date(now).toISOString()}`).toEqual(
                slowDue(cron, zone, firstDue, now),
              );
  });

  it('a day of missed minutely occurrences: 1,441 runs counted, the latest and the next (speed: test/bench/scheduler.bench.ts)', () => {
    const firstDue = Date.parse('2025-06-01T00:00:00Z');
    const due = dueOccurrences('* * * * *', 'Europe/Berlin', firstDue, firstDue + DAY);
    expect(due).toEqual({ latest: firstDue + DAY, count: 1441, next: firstDue + DAY + 60_000 });
  });

  it('a day of minutely occurrences across the fall-back: the repeated hour runs once', () => {
    const firstDue = Date.parse('2025-10-25T12:00:00Z');
    const due = dueOccurrences('* * * * *', 'Europe/Berlin', firstDue, firstDue + DAY);
    expect(due).toEqual({ latest: firstDue + DAY, count: 1441 - 60, next: firstDue + DAY + 60_000 });
  });

  it('stops counting at 100,000 (about 70 days of minutes)', () => {
    const firstDue = Date.parse('2025-06-01T00:00:00Z');
    const due = dueOccurrences('* * * * *', 'Europe/Berlin', firstDue, firstDue + 100 * DAY);
    expect(due).toEqual({ latest: firstDue + 99_999 * 60_000, count: 100_000, next: firstDue + 100_000 * 60_000 });
  });
});
