/** Queuing runs (manual, scheduled, log-triggered) and waiting for their outcome. */
import type { ActionDefinition, LogMode } from '../../contract/actions.js';
import type { RunOutcome } from '../../contract/pipeline.js';
import type { ServerContext } from '../context.js';
import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { countRunsSince, findRunByKey, getRun, insertRun, type RunRow, type TriggerKind } from './run-store.js';
import type { ActionRow } from './store.js';

export interface RunRequest {
  payload: Record<string, unknown>;
  environment: 'live' | 'viewer';
  idempotencyKey?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads `{ payload, wait, environment }` of the run route; payload over the limit is a 413 before anything runs. */
export function parseRunBody(
  ctx: ServerContext,
  body: Record<string, unknown>,
): { payload: Record<string, unknown>; wait: boolean; environment: 'live' | 'viewer' } {
  const payload = body.payload ?? {};
  if (!isObject(payload)) throw new HttpError(400, 'INVALID_FIELD', 'Field "payload" must be a JSON object');
  const size = JSON.stringify(payload).length;
  if (size > ctx.limits.payloadChars)
    throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `The payload is ${size} characters of JSON; the limit is ${ctx.limits.payloadChars}`);
  if (body.wait !== undefined && typeof body.wait !== 'boolean') throw new HttpError(400, 'INVALID_FIELD', 'Field "wait" must be a boolean');
  const environment = body.environment ?? 'live';
  if (environment !== 'live' && environment !== 'viewer') throw new HttpError(400, 'INVALID_FIELD', 'Field "environment" must be live or viewer');
  return { payload, wait: body.wait === true, environment };
}

/** The copy an environment runs: live → published snapshot only; viewer → working copy. */
export function definitionFor(action: ActionRow, environment: 'live' | 'viewer'): ActionDefinition {
  if (!action.active) throw new HttpError(422, 'ACTION_INACTIVE', `Action "${action.name}" is inactive; inactive actions never run`);
  if (environment === 'viewer') return action.working;
  if (!action.published)
    throw new HttpError(
      422,
      'ACTION_NOT_PUBLISHED',
      `Action "${action.name}" is not published; the live app runs published actions only (publish it, or run it from the viewer)`,
    );
  return action.published;
}

export interface Queued {
  runId: number;
  /** False when an earlier request with the same Idempotency-Key queued it. */
  created: boolean;
}

/** Queues a manual run through the REST route: rate limit, environment rules, idempotency. */
export async function queueManualRun(ctx: ServerContext, action: ActionRow, request: RunRequest): Promise<Queued> {
  const definition = definitionFor(action, request.environment);
  if (definition.environment === 'client')
    throw new HttpError(422, 'WRONG_ENVIRONMENT', `Action "${action.name}" has environment client: it runs on the device, not on the server`);
  // One app's enqueues (every trigger) queue on a lock (any instance): the rate-limit count and the idempotency
  // lookup are exact, and concurrent requests wait their turn instead of failing to serialize and retrying.
  return ctx.db.lockedTransaction(appRunsLock(action.appId), async (tx) => {
    if (request.idempotencyKey) {
      const existing = await findRunByKey(tx, action.appId, request.idempotencyKey);
      if (existing) {
        if (existing.actionId !== action.id) throw new HttpError(409, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for a run of another action');
        return { runId: existing.id, created: false };
      }
    }
    await checkRateLimit(ctx, tx, action.appId);
    const runId = await insertRun(tx, {
      appId: action.appId,
      organizationId: action.organizationId,
      actionId: action.id,
      mode: 'on-demand',
      trigger: 'manual',
      environment: request.environment,
      definition,
      payload: request.payload,
      context: { trigger: 'manual' },
      idempotencyKey: request.idempotencyKey ?? null,
      queuedAt: ctx.nowIso(),
    });
    return { runId, created: true };
  });
}

/** The lock every enqueue of an app's runs holds (Database.lockedTransaction): rate counts are exact. */
export const appRunsLock = (appId: number) => `app-runs:${appId}`;

export type RateCheck = { allowed: true } | { allowed: false; limit: number; retryAt: string };

/** Whether the app may queue one more run now: `limits.runsPerMinute` counts every trigger. Call under appRunsLock. */
export async function checkRunRate(ctx: ServerContext, tx: Queryable, appId: number): Promise<RateCheck> {
  const now = ctx.clock();
  const limit = ctx.limits.runsPerMinute;
  const { count, oldest } = await countRunsSince(tx, appId, new Date(now - 60_000).toISOString());
  if (count < limit) return { allowed: true };
  return { allowed: false, limit, retryAt: new Date(Date.parse(oldest!) + 60_000).toISOString() };
}

/** Manual runs over the limit: 429 RATE_LIMITED with `retryAt`. */
async function checkRateLimit(ctx: ServerContext, tx: Queryable, appId: number): Promise<void> {
  const check = await checkRunRate(ctx, tx, appId);
  if (check.allowed) return;
  throw new HttpError(429, 'RATE_LIMITED', `More than ${check.limit} runs per minute for app ${appId}; retry at ${check.retryAt}`, {
    retryAt: check.retryAt,
  });
}

/** Queues a run of a trigger (schedule, log) inside the caller's transaction. */
export async function insertTriggeredRun(
  ctx: ServerContext,
  tx: Queryable,
  action: ActionRow,
  init: { mode: LogMode; trigger: TriggerKind; context: Record<string, unknown>; scheduledFor?: string; idempotencyKey?: string },
): Promise<number> {
  return insertRun(tx, {
    appId: action.appId,
    organizationId: action.organizationId,
    actionId: action.id,
    mode: init.mode,
    trigger: init.trigger,
    environment: 'live',
    definition: action.published!,
    payload: {},
    context: init.context,
    scheduledFor: init.scheduledFor ?? null,
    idempotencyKey: init.idempotencyKey ?? null,
    queuedAt: ctx.nowIso(),
  });
}

/** Waits for in-process completion signals, polling the database too (another instance may run it). */
export function createRunWaiters() {
  const waiters = new Map<number, Set<() => void>>();
  return {
    /** Runs someone waits for now (diagnostics, tests). */
    waiting: () => waiters.size,
    notify(runId: number) {
      for (const fn of waiters.get(runId) ?? []) fn();
      waiters.delete(runId);
    },
    async wait(ctx: Pick<ServerContext, 'db'>, runId: number, timeoutMs: number): Promise<RunRow | undefined> {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const run = await getRun(ctx.db, runId);
        if (!run || run.status === 'succeeded' || run.status === 'failed') return run;
        const left = end - Date.now();
        if (left <= 0) return run;
        await new Promise<void>((resolve) => {
          const set = waiters.get(runId) ?? new Set();
          waiters.set(runId, set);
          const done = () => {
            clearTimeout(t);
            set.delete(done);
            // A run that ends without `notify` here (on another instance, or between the read and this wait) leaves no entry.
            if (set.size === 0 && waiters.get(runId) === set) waiters.delete(runId);
            resolve();
          };
          const t = setTimeout(done, Math.min(left, 500));
          set.add(done);
        });
      }
    },
  };
}

export type RunWaiters = ReturnType<typeof createRunWaiters>;

/** The outcome of a finished run, as the run route answers `wait: true`. */
export function outcomeOf(run: RunRow): RunOutcome | undefined {
  return run.outcome ? ({ trace: [], ...run.outcome } as RunOutcome) : undefined;
}
