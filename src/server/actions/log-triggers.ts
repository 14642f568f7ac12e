/**
 * Log triggers: data source log events are matched against the `log`
 * triggers of active, published server/any actions (partial-document `where`,
 * design §7); each matching action gets one queued run with `{ trigger: 'log', log }`.
 */
import { createHash } from 'node:crypto';
import { partialMatcher } from '../../contract/action-where.js';
import type { ServerContext } from '../context.js';
import type { LogEvent } from '../events.js';
import type { Queryable } from '../db/database.js';
import { hasTriggerLog, insertLog } from './log-store.js';
import { findRunByKey } from './run-store.js';
import { appRunsLock, checkRunRate, insertTriggeredRun } from './runs.js';
import { listLiveActionTexts } from './store.js';
import type { ActionDefinition } from '../../contract/actions.js';

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

/** Default of `limits.logTriggerChain`: log-triggered runs in a row before the next one is skipped. */
export const DEFAULT_LOG_TRIGGER_CHAIN = 10;

/** The chain recorded on a log (0 for writes of anything but a log-triggered run). */
const chainOf = (data: unknown): number => {
  const chain = (data as { chain?: unknown } | null | undefined)?.chain;
  return typeof chain === 'number' && Number.isSafeInteger(chain) && chain > 0 ? chain : 0;
};

/** A run's place in a chain of log-triggered runs: 1 for a run triggered by a write of no such run, and so on. */
export function runChain(run: { trigger: string; context: Record<string, unknown> }): number {
  if (run.trigger !== 'log') return 0;
  return chainOf((run.context.log as { data?: unknown } | undefined)?.data) + 1;
}

/**
 * Log-trigger matchers of the published definitions seen, by a hash of their text (a definition may be 256K
 * characters: the key is 28), at most MEMO_SIZE, the least recently used out first.
 */
const memo = new Map<string, ((log: Record<string, unknown>) => boolean)[]>();
const MEMO_SIZE = 1000;

/**
 * The `where` matchers of a published definition's log triggers (none for a `client` action). Memoized by the
 * text's hash: every entry written reads the app's live actions, and parsing and compiling each of them again per
 * write cost 0.9 ms a write with 30 actions (2,000 inserts: 4.2 → 6.0 s). A definition published again is
 * another text; the row itself is read fresh on every write.
 */
function logTriggersOf(published: string): ((log: Record<string, unknown>) => boolean)[] {
  const key = createHash('sha1').update(published).digest('base64');
  let matchers = memo.get(key);
  if (matchers) memo.delete(key);
  else {
    const def = JSON.parse(published) as ActionDefinition;
    matchers = def.environment === 'client' ? [] : def.triggers.filter((t) => t.trigger === 'log').map((t) => partialMatcher(t.where));
    if (memo.size >= MEMO_SIZE) memo.delete(memo.keys().next().value!);
  }
  memo.set(key, matchers);
  return matchers;
}

/** Queues the runs an event triggers; returns their ids. */
export async function dispatchLogEvent(ctx: ServerContext, event: LogEvent): Promise<number[]> {
  // Only data source (and other non-action) logs trigger actions: never an action's own run logs.
  if (typeof event.type !== 'string' || event.type.startsWith('app.')) return [];
  const log = logObjectOf(event);
  // An action whose writes trigger itself (or a cycle of actions) would run without end: past the limit the
  // next run is skipped and the skip logged (app.task.skipped, reason 'loop').
  const chain = chainOf(event.data) + 1;
  const maxChain = ctx.limits.logTriggerChain ?? DEFAULT_LOG_TRIGGER_CHAIN;
  const live = await listLiveActionTexts(ctx.db, { appId: event.appId, organizationId: event.organizationId });
  const runIds: number[] = [];
  for (const stored of live) {
    if (!logTriggersOf(stored.published).some((matches) => matches(log))) continue;
    const action = stored.row();
    const key = event.id !== undefined ? `log:${event.type}:${event.id}:${action.id}` : undefined;
    const skip = (tx: Queryable, result: Record<string, unknown>) =>
      insertLog(tx, {
        type: 'app.task.skipped',
        appId: action.appId,
        organizationId: action.organizationId,
        actionId: action.id,
        createdAt: ctx.nowIso(),
        triggerKey: key,
        data: { mode: 'on-demand', duration: 0, actionId: action.id, trigger: 'log', result: { ...result, logId: log.id } },
      });
    // Under the app's enqueue lock, and once per (event, action): an event delivered again (PostgreSQL, after
    // its instance died) finds the run or the skip record of its first delivery and adds nothing.
    const runId = await ctx.db.lockedTransaction(appRunsLock(action.appId), async (tx) => {
      if (key && ((await findRunByKey(tx, action.appId, key)) || (await hasTriggerLog(tx, action.appId, key)))) return undefined;
      if (chain > maxChain) {
        await skip(tx, { reason: 'loop', chain });
        return undefined;
      }
      // Counted against the app's runs per minute like any run; one refused is recorded, never dropped silently.
      const rate = await checkRunRate(ctx, tx, action.appId);
      if (!rate.allowed) {
        await skip(tx, { reason: 'rate-limit', limit: rate.limit, retryAt: rate.retryAt });
        return undefined;
      }
      return insertTriggeredRun(ctx, tx, action, { mode: 'on-demand', trigger: 'log', context: { trigger: 'log', log }, idempotencyKey: key });
    });
    if (runId !== undefined) runIds.push(runId);
  }
  return runIds;
}
