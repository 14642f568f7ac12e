/** SQL of the durable run queue (`action_runs`). */
import type { Database, Queryable } from '../db/database.js';
import { skipLocked } from '../db/claim.js';
import type { ActionDefinition, LogMode } from '../../contract/actions.js';
import type { RunOutcome } from '../../contract/pipeline.js';

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed';
export type TriggerKind = 'manual' | 'schedule' | 'log';

export interface RunRow {
  id: number;
  appId: number;
  organizationId: number;
  actionId: number;
  mode: LogMode;
  trigger: TriggerKind;
  /** Which copy ran: `live` (published snapshot) or `viewer` (working copy). */
  environment: 'live' | 'viewer';
  definition: ActionDefinition;
  payload: Record<string, unknown>;
  context: Record<string, unknown>;
  status: RunStatus;
  idempotencyKey: string | null;
  scheduledFor: string | null;
  queuedAt: string;
  claimedBy: string | null;
  /** When a worker last took it (null while queued). */
  startedAt: string | null;
  attempts: number;
  finishedAt: string | null;
  outcome: StoredOutcome | null;
  logId: number | null;
}

/** What a finished run keeps (the log record holds the same). */
export type StoredOutcome = Omit<RunOutcome, 'trace'> & { trace?: RunOutcome['trace'] };

const COLUMNS = `id, app_id AS appId, organization_id AS organizationId, action_id AS actionId, mode, trigger_kind AS "trigger",
  environment, definition, payload, context, status, idempotency_key AS idempotencyKey, scheduled_for AS scheduledFor,
  queued_at AS queuedAt, claimed_by AS claimedBy, claimed_at AS startedAt, attempts, finished_at AS finishedAt, outcome, log_id AS logId`;

type Raw = Omit<RunRow, 'definition' | 'payload' | 'context' | 'outcome'> & { definition: string; payload: string; context: string; outcome: string | null };

const toRun = (r: Raw | undefined): RunRow | undefined =>
  r && {
    ...r,
    definition: JSON.parse(r.definition),
    payload: JSON.parse(r.payload),
    context: JSON.parse(r.context),
    outcome: r.outcome === null ? null : JSON.parse(r.outcome),
  };

export interface NewRun {
  appId: number;
  organizationId: number;
  actionId: number;
  mode: LogMode;
  trigger: TriggerKind;
  environment: 'live' | 'viewer';
  definition: ActionDefinition;
  payload: Record<string, unknown>;
  context: Record<string, unknown>;
  idempotencyKey?: string | null;
  scheduledFor?: string | null;
  queuedAt: string;
}

export async function insertRun(db: Queryable, run: NewRun): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO action_runs (app_id, organization_id, action_id, mode, trigger_kind, environment, definition, payload, context,
       idempotency_key, scheduled_for, queued_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [
      run.appId,
      run.organizationId,
      run.actionId,
      run.mode,
      run.trigger,
      run.environment,
      JSON.stringify(run.definition),
      JSON.stringify(run.payload),
      JSON.stringify(run.context),
      run.idempotencyKey ?? null,
      run.scheduledFor ?? null,
      run.queuedAt,
    ],
  );
  return row!.id;
}

export async function getRun(db: Queryable, id: number): Promise<RunRow | undefined> {
  return toRun(await db.get<Raw>(`SELECT ${COLUMNS} FROM action_runs WHERE id = ?`, [id]));
}

/** The run `id` of the app (undefined for another app's run). */
export async function getAppRun(db: Queryable, appId: number, id: number): Promise<RunRow | undefined> {
  return toRun(await db.get<Raw>(`SELECT ${COLUMNS} FROM action_runs WHERE id = ? AND app_id = ?`, [id, appId]));
}

export async function findRunByKey(db: Queryable, appId: number, key: string): Promise<RunRow | undefined> {
  return toRun(await db.get<Raw>(`SELECT ${COLUMNS} FROM action_runs WHERE app_id = ? AND idempotency_key = ?`, [appId, key]));
}

/**
 * Atomically takes a queued run for this worker (one UPDATE … RETURNING: two workers on one database never get
 * the same run), fairly across apps: among the apps with queued runs and fewer than `appConcurrency` running on
 * this worker, the one with the fewest running here, then the one served least recently (its latest claim on any
 * instance), then the oldest head of queue; that app's oldest queued run. One app's long queue thus delays
 * another app's run by one run slot at most. On PostgreSQL the pick skips runs another instance is claiming
 * right now (`FOR UPDATE SKIP LOCKED`, db/claim.ts) instead of queueing behind them and coming back empty.
 */
export async function claimNextRun(
  db: Queryable & Partial<Pick<Database, 'dialect'>>,
  claimedBy: string,
  now: string,
  leaseUntil: string,
  appConcurrency = Number.MAX_SAFE_INTEGER,
): Promise<RunRow | undefined> {
  const fairApp = `SELECT h.app_id FROM (SELECT app_id, MIN(id) AS head FROM action_runs WHERE status = 'queued' GROUP BY app_id) h
      LEFT JOIN (SELECT app_id, COUNT(*) AS n FROM action_runs WHERE status = 'running' AND claimed_by = ? GROUP BY app_id) r ON r.app_id = h.app_id
      WHERE COALESCE(r.n, 0) < ?
      ORDER BY COALESCE(r.n, 0), COALESCE((SELECT MAX(c.claimed_at) FROM action_runs c WHERE c.app_id = h.app_id), ''), h.head LIMIT 1`;
  const raw = await db.get<Raw>(
    `UPDATE action_runs SET status = 'running', claimed_by = ?, claimed_at = ?, lease_until = ?, attempts = attempts + 1
     WHERE id = (SELECT id FROM action_runs WHERE status = 'queued' AND app_id = (${fairApp}) ORDER BY id LIMIT 1${skipLocked(db)}) AND status = 'queued'
     RETURNING ${COLUMNS}`,
    [claimedBy, now, leaseUntil, claimedBy, Math.min(appConcurrency, Number.MAX_SAFE_INTEGER)],
  );
  return toRun(raw);
}

/** Puts back runs whose worker vanished (lease expired) so another worker takes them. */
export async function requeueExpired(db: Queryable, now: string): Promise<number> {
  const { changes } = await db.run(
    `UPDATE action_runs SET status = 'queued', claimed_by = NULL, claimed_at = NULL, lease_until = NULL
     WHERE status = 'running' AND lease_until < ?`,
    [now],
  );
  return changes;
}

/** A closing worker hands its unfinished runs back to the queue. */
export async function releaseRun(db: Queryable, id: number, claimedBy: string): Promise<void> {
  await db.run(
    `UPDATE action_runs SET status = 'queued', claimed_by = NULL, claimed_at = NULL, lease_until = NULL
     WHERE id = ? AND status = 'running' AND claimed_by = ?`,
    [id, claimedBy],
  );
}

/** Records the end of a run; false when this worker no longer owns it (then it must not log). */
export async function finishRun(
  db: Queryable,
  id: number,
  claimedBy: string,
  status: 'succeeded' | 'failed',
  outcome: StoredOutcome,
  now: string,
): Promise<boolean> {
  const { changes } = await db.run(`UPDATE action_runs SET status = ?, outcome = ?, finished_at = ? WHERE id = ? AND status = 'running' AND claimed_by = ?`, [
    status,
    JSON.stringify(outcome),
    now,
    id,
    claimedBy,
  ]);
  return changes === 1;
}

export async function setRunLog(db: Queryable, id: number, logId: number): Promise<void> {
  await db.run('UPDATE action_runs SET log_id = ? WHERE id = ?', [logId, id]);
}

/** Whether a scheduled run of the action is still queued or running (overlap rule). */
export async function hasUnfinishedScheduledRun(db: Queryable, actionId: number): Promise<boolean> {
  const row = await db.get(`SELECT id FROM action_runs WHERE action_id = ? AND mode = 'scheduled' AND status IN ('queued', 'running') LIMIT 1`, [actionId]);
  return row !== undefined;
}

/** Runs of an app (any trigger) queued since `since`, with the oldest time (rate limit window). */
export async function countRunsSince(db: Queryable, appId: number, since: string): Promise<{ count: number; oldest: string | null }> {
  const row = await db.get<{ n: number; oldest: string | null }>(
    `SELECT COUNT(*) AS n, MIN(queued_at) AS oldest FROM action_runs WHERE app_id = ? AND queued_at > ?`,
    [appId, since],
  );
  return { count: Number(row?.n ?? 0), oldest: row?.oldest ?? null };
}

export async function countUnfinished(db: Queryable): Promise<number> {
  const row = await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM action_runs WHERE status IN ('queued', 'running')`);
  return Number(row?.n ?? 0);
}
