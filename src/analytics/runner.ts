import type { ClientContext } from '../core/context.js';
import type { AnalyticsRunner } from './dispatcher.js';

/**
 * The device runner of analytics-triggered actions: the actions module's device run (sandbox off the main
 * thread, run log recorded on the device) with `{ trigger: 'analytics', event }` in the run's context.
 */
export function deviceRunner(ctx: ClientContext): AnalyticsRunner {
  return async (action) => {
    ctx.logger.once('analytics-runner', `Analytics trigger of "${action.name}" matched, but device runs are not available in this build`);
  };
}
