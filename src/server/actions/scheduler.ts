/**
 * The scheduler: fires each occurrence of active, published actions with a
 * schedule trigger. `next_run_at` always follows from the last scheduled
 * instant; each occurrence is claimed with a conditional row update so it
 * fires once even with several backends on one database.
 */
import type { ServerContext } from '../context.js';
import { insertLog } from './log-store.js';
import { hasUnfinishedScheduledRun, findRunByKey } from './run-store.js';
import { appRunsLock, checkRunRate, insertTriggeredRun } from './runs.js';
import { dueOccurrences } from './schedule.js';
import { scheduleOf } from './service.js';
import { claimOccurrence, listDueActions, type ActionRow } from './store.js';

export interface TickReport {
  /** Runs queued by this tick. */
  queued: { actionId: number; scheduledAt: string; runId: number }[];
  /** Occurrences not run: overlap with a running one, missed under the `skip` policy, or over the app's runs per minute. */
  skipped: { actionId: number; scheduledAt: string; reason: SkipReason; count: number }[];
}

type SkipReason = 'overlap' | 'missed' | 'rate-limit';

export interface SchedulerOptions {
  /** An occurrence later than this (ms) counts as missed (default 60 s). */
  graceMs?: number;
}

async function fireDue(ctx: ServerContext, action: ActionRow, now: number, graceMs: number, report: TickReport): Promise<void> {
  const schedule = scheduleOf(action.published);
  const expected = action.nextRunAt!;
  if (!schedule) {
    await claimOccurrence(ctx.db, action.id, expected, expected, null);
    return;
  }
  const { latest, count, next } = dueOccurrences(schedule.frequency, schedule.timezone, Date.parse(expected), now);
  const scheduledAt = new Date(latest).toISOString();
  const late = now - latest > graceMs;
  const policy = action.published!.missedRuns ?? 'coalesce';
  const fire = policy === 'coalesce' || !late;
  const missed = fire ? count - 1 : count;
  const nextIso = next === null ? null : new Date(next).toISOString();
  // Under the app's enqueue lock: the occurrence counts against the app's runs per minute like any run.
  await ctx.db.lockedTransaction(appRunsLock(action.appId), async (tx) => {
    if (!(await claimOccurrence(tx, action.id, expected, scheduledAt, nextIso))) return;
    const skipLog = (reason: SkipReason, n: number, extra: Record<string, unknown> = {}) => {
      report.skipped.push({ actionId: action.id, scheduledAt, reason, count: n });
      return insertLog(tx, {
        type: 'app.task.skipped',
        appId: action.appId,
        organizationId: action.organizationId,
        actionId: action.id,
        createdAt: ctx.nowIso(),
        data: { mode: 'scheduled', duration: 0, actionId: action.id, result: { reason, scheduledAt, count: n, ...extra } },
      });
    };
    if (policy === 'skip' && missed > 0) await skipLog('missed', missed);
    if (!fire) return;
    if (await hasUnfinishedScheduledRun(tx, action.id)) {
      await skipLog('overlap', 1);
      return;
    }
    const key = `schedule:${action.id}:${scheduledAt}`;
    if (await findRunByKey(tx, action.appId, key)) return;
    const rate = await checkRunRate(ctx, tx, action.appId);
    if (!rate.allowed) {
      await skipLog('rate-limit', 1, { limit: rate.limit, retryAt: rate.retryAt });
      return;
    }
    const runId = await insertTriggeredRun(ctx, tx, action, {
      mode: 'scheduled',
      trigger: 'schedule',
      context: { trigger: 'schedule', scheduledAt, ...(missed > 0 ? { missed } : {}) },
      scheduledFor: scheduledAt,
      idempotencyKey: key,
    });
    report.queued.push({ actionId: action.id, scheduledAt, runId });
  });
}

/** One pass over the due actions at `ctx.clock()`. Deterministic: tests call it after moving the clock. */
export async function schedulerTick(ctx: ServerContext, options: SchedulerOptions = {}): Promise<TickReport> {
  const now = ctx.clock();
  const report: TickReport = { queued: [], skipped: [] };
  for (const action of await listDueActions(ctx.db, new Date(now).toISOString())) {
    try {
      await fireDue(ctx, action, now, options.graceMs ?? 60_000, report);
    } catch (error) {
      console.error('[in-app-runtime server] scheduling action %d failed', action.id, error);
    }
  }
  return report;
}
