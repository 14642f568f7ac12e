import type { ClientContext } from '../core/context.js';

/** Client.Analytics (filled in by its issue). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface AnalyticsApi {}

export function createAnalyticsApi(_ctx: ClientContext): AnalyticsApi {
  return {};
}
