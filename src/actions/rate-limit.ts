/** Manual runs per app per minute on this device (`limits.runsPerMinute`), sliding window. */
import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';

export function takeRunSlot(ctx: ClientContext): void {
  const appId = ctx.appId();
  const now = ctx.now();
  const perApp = ctx.runtime.runSlots;
  const times = (perApp.get(appId) ?? []).filter((t) => t > now - 60_000);
  const limit = ctx.config().limits.runsPerMinute;
  if (times.length >= limit) {
    const retryAt = new Date(times[0]! + 60_000).toISOString();
    perApp.set(appId, times);
    throw new ClientError('RATE_LIMITED', `More than ${limit} manual runs per minute; retry at ${retryAt}`, { retryAt });
  }
  times.push(now);
  perApp.set(appId, times);
}
