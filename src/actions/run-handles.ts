/**
 * Client.App.Actions.getRun (docs/actions.md "Run handles"), in the lazy `runs` chunk: a server run from the
 * backend (`GET tasks/runs/:runId`, with the Idempotency-Key it was queued with), a device run from this
 * client's memory while it runs, then from its log record (on the device, then uploaded), a run queued offline
 * from the queue until it is sent.
 */
import { isApiError } from '../http/errors.js';
import type { RunsHost } from './runs-host.js';
import { deviceRunInfo } from '../contract/run-info.js';
import { DEVICE_RUN_PREFIX, QUEUED_RUN_PREFIX, type RunId, type RunInfo, type RunRef } from '../contract/actions.js';

const blank = (runId: RunId, status: RunInfo['status'], queuedAt: string): RunInfo => ({
  runId,
  actionId: null,
  source: typeof runId === 'string' && runId.startsWith(DEVICE_RUN_PREFIX) ? 'device' : 'server',
  status,
  queuedAt,
  startedAt: null,
  finishedAt: null,
  durationMs: null,
  trace: [],
  logId: null,
});

export async function getRun(host: RunsHost, run: RunId | RunRef): Promise<RunInfo> {
  const { ctx, runs, ClientError } = host;
  // A whole handle carries its key: a client token reads the run with it, also after a reload.
  const handle = typeof run === 'object' && run !== null ? run : undefined;
  const runId = handle ? handle.runId : (run as RunId);
  const handleKey = typeof handle?.idempotencyKey === 'string' && handle.idempotencyKey !== '' ? handle.idempotencyKey : undefined;
  const notFound = () => new ClientError('RUN_NOT_FOUND', `No run ${String(runId)} is known to this app and client`, { runId });
  // `id` '' reads the run queued with `key` (GET tasks/runs).
  const fromBackend = async (id: number | string, key = typeof id === 'number' ? (handleKey ?? runs.keys.get(id)) : undefined): Promise<RunInfo> => {
    try {
      const answer = await ctx.http.request<{ run: RunInfo }>('GET', `v1/apps/${ctx.appId()}/tasks/runs${id === '' ? '' : `/${encodeURIComponent(id)}`}`, {
        headers: key ? { 'Idempotency-Key': key } : undefined,
      });
      return answer.run;
    } catch (error) {
      if (isApiError(error) && error.status === 404 && error.code === 'RUN_NOT_FOUND') throw notFound();
      throw error;
    }
  };
  if (typeof runId === 'number') {
    if (!Number.isSafeInteger(runId) || runId <= 0) throw new ClientError('INVALID_ARGUMENT', 'runId must be the runId of a run handle');
    return fromBackend(runId);
  }
  if (typeof runId !== 'string') throw new ClientError('INVALID_ARGUMENT', 'runId must be the runId of a run handle');
  if (runId.startsWith(QUEUED_RUN_PREFIX)) {
    const key = runId.slice(QUEUED_RUN_PREFIX.length);
    const sent = runs.sent.get(key);
    if (typeof sent === 'number') return fromBackend(sent, key);
    if (sent) return { ...blank(runId, 'failed', sent.queuedAt), error: { code: sent.code, errorType: 'ApiError', errorMessage: sent.message } };
    const queued = (await host.queuedRuns()).find((r) => r.idempotencyKey === key);
    if (queued) return blank(runId, 'queued-offline', queued.queuedAt);
    // Sent by another tab or page load of the app: the backend knows it by its key.
    return fromBackend('', key);
  }
  if (runId.startsWith(DEVICE_RUN_PREFIX)) {
    const running = runs.device.get(runId);
    if (running)
      return { ...blank(runId, 'running', running.startedAt), actionId: running.actionId, actionName: running.actionName, startedAt: running.startedAt };
    const local = (await host.pendingRunLogs()).find((p) => p.log.deviceKey === runId);
    if (local) return deviceRunInfo(local.log);
    return fromBackend(runId);
  }
  throw new ClientError('INVALID_ARGUMENT', `"${runId}" is not a run id (a number, "dev-…" or "queued:…") or a run handle`);
}
