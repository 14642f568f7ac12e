/**
 * One run as `GET v1/apps/:appId/tasks/runs/:runId` answers it (docs/actions.md "Run handles"): a server run from
 * its `action_runs` row, a device run from the log record the device uploaded (its `deviceKey` is its run id).
 */
import { deviceRunInfo } from '../../contract/run-info.js';
import { DEVICE_RUN_PREFIX, type RunInfo } from '../../contract/actions.js';
import type { TraceEntry } from '../../contract/pipeline.js';
import type { ServerContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import { getDeviceLog } from './log-store.js';
import { findRunByKey, getAppRun, type RunRow } from './run-store.js';
import { outcomeOf } from './runs.js';
import { getActionById } from './store.js';

/** A run id as a route or getLogs names it: a server run id, or a device run's key. */
export type ParsedRunId = { runId: number } | { deviceKey: string };

const DEVICE_RUN_ID = /^dev-[\w.:-]{4,96}$/;

/** Parses a run id (a positive integer, also as digits, or `dev-…`); 400 `code` naming `what` otherwise. */
export function parseRunId(raw: unknown, what: string, code = 'INVALID_FIELD'): ParsedRunId {
  if (typeof raw === 'number' || (typeof raw === 'string' && /^\d{1,16}$/.test(raw))) {
    const n = Number(raw);
    if (Number.isSafeInteger(n) && n > 0) return { runId: n };
  } else if (typeof raw === 'string' && raw.startsWith(DEVICE_RUN_PREFIX) && DEVICE_RUN_ID.test(raw)) return { deviceKey: raw };
  throw new HttpError(400, code, `${what} must be a run id: a positive integer (server run) or "dev-…" (device run)`);
}

/**
 * A server run's trace as a client token sees it: the nodes' inputs and outputs are left out. A server run works
 * with the app's access (private data sources, secrets in settings) and a page gets only what the action returns;
 * the intermediate values stay with API and studio tokens.
 */
export function publicTrace(trace: readonly TraceEntry[]): TraceEntry[] {
  // Log lines (console, the log built-in) are values in between too.
  return trace.map(({ input: _input, output: _output, ...rest }) => (rest.outcome === 'log' ? { ...rest, message: '' } : rest));
}

/** A server run as a client token sees it (see {@link publicTrace}). */
export const publicRunInfo = (info: RunInfo): RunInfo => (info.source === 'server' ? { ...info, trace: publicTrace(info.trace) } : info);

const notFound = (raw: string) => new HttpError(404, 'RUN_NOT_FOUND', `No run ${raw} in this app`);

/** The status a stored run answers with (the store says succeeded, the API completed). */
const statusOf = (row: RunRow): RunInfo['status'] => (row.status === 'succeeded' ? 'completed' : row.status);

/** A server run's row as the route answers it. */
export function serverRunInfo(row: RunRow, actionName?: string): RunInfo {
  const info: RunInfo = {
    runId: row.id,
    actionId: row.actionId,
    ...(actionName !== undefined ? { actionName } : {}),
    source: 'server',
    status: statusOf(row),
    queuedAt: row.queuedAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    durationMs: row.outcome ? Math.round(row.outcome.durationMs) : null,
    attempts: row.attempts,
    trace: row.outcome?.trace ?? [],
    logId: row.logId,
  };
  const outcome = outcomeOf(row);
  if (outcome?.ok) info.result = outcome.result ?? null;
  else if (outcome) {
    info.error = { code: outcome.error.code || 'RUN_FAILED', errorType: outcome.error.errorType, errorMessage: outcome.error.errorMessage };
    if (outcome.error.trace.length) info.trace = outcome.error.trace;
  }
  return info;
}

/**
 * The run `raw` of the app. `key` is the caller's `Idempotency-Key` header: a client token (public: anyone
 * who opens the page holds it) reads a server run only with the key the run was queued with, so one visitor
 * cannot read another's results by counting run ids; a device run id is itself a random key. Another app's run,
 * or a key that does not match, is 404 RUN_NOT_FOUND, exactly as a missing run.
 */
export async function readRun(ctx: ServerContext, appId: number, raw: string, access: { needsKey: boolean; key?: string }): Promise<RunInfo> {
  const id = parseRunId(raw, 'Path parameter "runId"', 'INVALID_PARAMETER');
  const nameOf = async (actionId: number | null) =>
    typeof actionId === 'number' && Number.isSafeInteger(actionId) ? (await getActionById(ctx.db, appId, actionId))?.name : undefined;
  if ('deviceKey' in id) {
    const log = await getDeviceLog(ctx.db, appId, id.deviceKey);
    if (!log) throw notFound(raw);
    return deviceRunInfo(log, await nameOf(log.data.actionId));
  }
  const row = await getAppRun(ctx.db, appId, id.runId);
  // A client token reads manual runs only: the backend's own runs (schedule, log triggers) have keys a visitor could work out.
  if (!row || (access.needsKey && (row.trigger !== 'manual' || !row.idempotencyKey || row.idempotencyKey !== access.key))) throw notFound(raw);
  return serverRunInfo(row, await nameOf(row.actionId));
}

/**
 * The run queued with this `Idempotency-Key` (`GET tasks/runs` with the header): how a device finds the run of a
 * request it queued offline and another tab (or an earlier page load) sent. The key is the capability, for every
 * kind of token; none, or no run queued with it, is 404 RUN_NOT_FOUND.
 */
export async function readRunByKey(ctx: ServerContext, appId: number, key: string | undefined, manualOnly = false): Promise<RunInfo> {
  if (!key) throw new HttpError(400, 'INVALID_PARAMETER', 'Header "Idempotency-Key" is required: the key the run was queued with');
  const row = await findRunByKey(ctx.db, appId, key);
  if (!row || (manualOnly && row.trigger !== 'manual')) throw new HttpError(404, 'RUN_NOT_FOUND', 'No run of this app was queued with this Idempotency-Key');
  return serverRunInfo(row, (await getActionById(ctx.db, appId, row.actionId))?.name);
}
