import { runOnDevice } from '../actions/device-run.js';
import type { ClientContext } from '../core/context.js';
import type { AnalyticsRunner } from './dispatcher.js';

/**
 * The device runner of analytics-triggered actions: the actions module's device run (the engine, off the
 * main thread where Workers exist; one run log recorded on the device, then uploaded) with
 * `{ trigger: 'analytics', event }` in the run's context and an empty payload. A failed run is logged.
 */
export function deviceRunner(ctx: ClientContext): AnalyticsRunner {
  return async (action, context) => {
    const outcome = await runOnDevice(ctx, action, {}, { mode: 'on-demand', context });
    if (!outcome.ok) ctx.logger.warn(`Analytics-triggered action "${action.name}" (${action.id}) failed: ${outcome.error.code} ${outcome.error.errorMessage}`);
  };
}
