import { describe, expect, it } from 'vitest';
import { cronError, dueOccurrences, nextOccurrence } from '../../src/server/actions/schedule.js';

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
