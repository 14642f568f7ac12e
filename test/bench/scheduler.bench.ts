import { expect, it } from 'vitest';
import { dueOccurrences, nextOccurrence } from '../../src/server/actions/schedule.js';

/**
 * Scheduler catch-up after downtime (issue 6): the missed occurrences of a minutely action over one day,
 * computed by `dueOccurrences` (one forward walk) vs. the baseline of stepping `nextOccurrence` from one
 * occurrence to the next (how catch-up worked before), measured in the same run. Both run synchronously on
 * the backend's event loop.
 */
const DAY = 86_400_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = (n: number, fn: () => unknown) => {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    times.push(performance.now() - t);
  }
  return median(times);
};

it('scheduler catch-up: one day of minutely occurrences', () => {
  const rows: { case: string; ms: number; 'baseline ms': number; ratio: number }[] = [];
  for (const [label, zone, start] of [
    ['Europe/Berlin, a June day', 'Europe/Berlin', '2025-06-01T00:00:00Z'],
    ['Europe/Berlin, across the October change', 'Europe/Berlin', '2025-10-25T12:00:00Z'],
    ['America/Santiago, across the September change', 'America/Santiago', '2025-09-06T12:00:00Z'],
  ] as const) {
    const from = Date.parse(start);
    const walk = time(5, () => dueOccurrences('* * * * *', zone, from, from + DAY));
    let stepped = 0;
    const baseline = time(1, () => {
      stepped = 0;
      for (let t: number | null = from; t !== null && t <= from + DAY; t = nextOccurrence('* * * * *', zone, t)) stepped++;
    });
    expect(dueOccurrences('* * * * *', zone, from, from + DAY).count).toBe(stepped);
    rows.push({ case: label, ms: +walk.toFixed(2), 'baseline ms': Math.round(baseline), ratio: +(walk / baseline).toFixed(4) });
  }
  const cap = Date.parse('2025-06-01T00:00:00Z');
  const capped = time(3, () => dueOccurrences('* * * * *', 'Europe/Berlin', cap, cap + 100 * DAY));
  rows.push({ case: '100,000 occurrences (the cap, ~70 days)', ms: +capped.toFixed(1), 'baseline ms': NaN, ratio: NaN });
  console.log('\nScheduler catch-up (dueOccurrences vs stepping nextOccurrence, same run)');
  console.table(rows);
});
