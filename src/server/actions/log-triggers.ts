/**
 * Log triggers: data source log events are matched against the `log`
 * triggers of active, published server/any actions (partial-document `where`,
 * design §7); each matching action gets one queued run with `{ trigger: 'log', log }`.
 */
import { partialMatcher } from '../../actions/where.js';
import type { ServerContext } from '../context.js';
import type { LogEvent } from '../events.js';
import { findRunByKey } from './run-store.js';
import { insertTriggeredRun } from './runs.js';
import { listLiveActions } from './store.js';

/** The spec's log object of a log-triggered run. */
export function logObjectOf(event: LogEvent): Record<string, unknown> {
  const pick = (key: string) => (event[key] === undefined ? null : event[key]);
  return {
    id: pick('id'),
    appId: event.appId,
    organizationId: event.organizationId,
    dataSourceId: pick('dataSourceId'),
    dataSourceEntryId: pick('dataSourceEntryId'),
    appNotificationId: pick('appNotificationId'),
    sessionId: pick('sessionId'),
    type: event.type,
    data: event.data ?? { columns: [] },
    createdAt: pick('createdAt') ?? null,
  };
}

/** Queues the runs an event triggers; returns their ids. */
export async function dispatchLogEvent(ctx: ServerContext, event: LogEvent): Promise<number[]> {
  // Only data source (and other non-action) logs trigger actions: never an action's own run logs.
  if (typeof event.type !== 'string' || event.type.startsWith('app.')) return [];
  const log = logObjectOf(event);
  const actions = await listLiveActions(ctx.db, { appId: event.appId, organizationId: event.organizationId });
  const runIds: number[] = [];
  for (const action of actions) {
    const def = action.published!;
    if (def.environment === 'client') continue;
    const matches = def.triggers.some((t) => t.trigger === 'log' && partialMatcher(t.where)(log));
    if (!matches) continue;
    const key = event.id !== undefined ? `log:${event.type}:${event.id}:${action.id}` : undefined;
    const runId = await ctx.db.transaction(async (tx) => {
      if (key && (await findRunByKey(tx, action.appId, key))) return undefined;
      return insertTriggeredRun(ctx, tx, action, { mode: 'on-demand', trigger: 'log', context: { trigger: 'log', log }, idempotencyKey: key });
    });
    if (runId !== undefined) runIds.push(runId);
  }
  return runIds;
}
