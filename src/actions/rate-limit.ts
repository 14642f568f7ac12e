/**
 * Manual runs per app per minute on this device (`limits.runsPerMinute`), sliding window. The times of the last
 * minute's runs are kept oldest first; expired ones are passed over by moving `head` and cut off once more than 1,024 have expired, so a run
 * costs the same whether the minute holds ten runs or sixty thousand (a filter of the whole list made each run
 * cost more the more runs the minute held: 2,100 → 800 runs/s after 30 s of runs).
 */
import type { ClientContext } from '../core/context.js';
import { entry } from '../core/runtime.js';
import { ClientError } from '../http/errors.js';

const WINDOW_MS = 60_000;

/** Run times of one app, ascending; those before `head` have expired. */
export interface RunSlots {
  times: number[];
  head: number;
}

export function takeRunSlot(ctx: ClientContext): void {
  const now = ctx.now();
  const slots = entry(ctx.runtime.runSlots, ctx.appId(), () => ({ times: [], head: 0 }));
  const { times } = slots;
  // Past the end `undefined <= …` is false: the loop stops there too.
  while ((times[slots.head] as number) <= now - WINDOW_MS) slots.head++;
  // Cut off once per 1,024 expired runs (a splice moves what is left).
  if (slots.head > 1024) {
    times.splice(0, slots.head);
    slots.head = 0;
  }
  const limit = ctx.config().limits.runsPerMinute;
  if (times.length - slots.head >= limit) {
    const retryAt = new Date(times[slots.head]! + WINDOW_MS).toISOString();
    throw new ClientError('RATE_LIMITED', `More than ${limit} manual runs per minute; retry at ${retryAt}`, { retryAt });
  }
  // A clock set back (an injected clock, a corrected device clock) keeps the list in order: the oldest run stays first.
  let at = times.length;
  while (at > slots.head && times[at - 1]! > now) at--;
  times.splice(at, 0, now);
}
