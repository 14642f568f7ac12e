/** A device run's log record as a run (`getRun`, `GET tasks/runs/:runId`): shared by the device and the backend. */
import type { RunOutcome, TraceEntry } from './pipeline.js';
import type { ActionLog, RunError, RunInfo } from './actions.js';

/**
 * The logged result of a failed run, on the device and the backend alike: `{ errorType, errorMessage, code,
 * trace }`, its trace without the nodes' `input` and `output` (the record's `data.trace` holds those once).
 */
export function failedResult(outcome: Extract<RunOutcome, { ok: false }>) {
  const { errorType, errorMessage, code, trace } = outcome.error;
  return { errorType, errorMessage, code, trace: (trace.length ? trace : outcome.trace).map(({ input: _i, output: _o, ...entry }) => entry) };
}

/** A logged result of a failed run (`{ errorType, errorMessage, code, trace }`) as error and trace. */
function failureOf(result: unknown): { error: RunError; trace: TraceEntry[] } {
  const r = (typeof result === 'object' && result !== null ? result : {}) as Record<string, unknown>;
  return {
    error: { code: String(r.code || 'RUN_FAILED'), errorType: String(r.errorType ?? 'Error'), errorMessage: String(r.errorMessage ?? '') },
    trace: Array.isArray(r.trace) ? (r.trace as TraceEntry[]) : [],
  };
}

/** The record of a device run (its `deviceKey` is the run id), kept on the device or uploaded. */
export function deviceRunInfo(log: ActionLog, actionName?: string): RunInfo {
  const failed = log.type === 'app.task.failed';
  const duration = Number(log.data.duration) || 0;
  const started = Date.parse(log.createdAt);
  const info: RunInfo = {
    runId: log.deviceKey!,
    actionId: log.data.actionId ?? null,
    ...(actionName !== undefined ? { actionName } : {}),
    source: 'device',
    status: failed ? 'failed' : 'completed',
    queuedAt: log.createdAt,
    startedAt: log.createdAt,
    // An uploaded duration is the device's word: one past the Date range must not make the answer throw.
    finishedAt: Number.isFinite(new Date(started + duration).getTime()) ? new Date(started + duration).toISOString() : log.createdAt,
    durationMs: duration,
    trace: [],
    logId: log.id,
  };
  if (failed) Object.assign(info, failureOf(log.data.result));
  else info.result = log.data.result ?? null;
  // The whole trace (with values) when the record has one, else the failure's (records before data.trace).
  if (Array.isArray(log.data.trace)) info.trace = log.data.trace as TraceEntry[];
  return info;
}
