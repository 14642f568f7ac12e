/** Client.App.Actions.getLogs and the upload of device run logs. */
import type { ClientContext } from '../core/context.js';
import { loadChunk } from '../core/lazy.js';
import { ClientError } from '../http/errors.js';
import { perClient } from '../storage/client-store.js';
import { onOnline } from '../storage/connectivity.js';
import { pendingRunLogs, uploadRunLogs } from '../storage/run-logs.js';
import { tasksPath } from './crud.js';
import { DEFAULT_LOG_LIMIT, LOG_TYPES, MAX_LOG_LIMIT, type ActionLog, type GetLogsOptions, type LogsPage } from './types.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Sends the device's pending run logs (`POST tasks/logs { logs }`); kept for later when offline. */
export async function uploadDeviceLogs(ctx: ClientContext): Promise<{ uploaded: number; remaining: number }> {
  // One app throughout: the logs read from its store go to its route, even if configure({ appId }) comes meanwhile.
  const appId = ctx.appId();
  return uploadRunLogs(
    ctx,
    async (logs) => {
      await ctx.http.request('POST', `v1/apps/${appId}/tasks/logs`, {
        json: { logs: logs.map((l) => ({ deviceKey: l.deviceKey, type: l.type, createdAt: l.createdAt, data: l.data })) },
      });
    },
    undefined,
    appId,
  );
}

/** Wait before an upload after a device run, so the runs of a burst (analytics triggers) share one request. */
export const LOG_UPLOAD_DELAY_MS = 250;

/**
 * Uploads the pending device run logs soon: at most one upload at a time per client, and runs in a burst
 * share one request instead of one each. A failed upload keeps the logs for the next run, `getLogs()`, the
 * next page load or the network coming back.
 */
export function scheduleLogUpload(ctx: ClientContext, delayMs = LOG_UPLOAD_DELAY_MS): void {
  const state = perClient(ctx, `runLogUpload:${ctx.appId()}`, () => {
    const s = { timer: undefined as ReturnType<typeof setTimeout> | undefined, running: false, again: false };
    onOnline(() => scheduleLogUpload(ctx, 0));
    return s;
  });
  if (state.running) return void (state.again = true);
  if (state.timer !== undefined) return;
  state.timer = setTimeout(async () => {
    state.timer = undefined;
    state.running = true;
    try {
      await uploadDeviceLogs(ctx);
    } catch (error) {
      ctx.logger.info(`Device run logs will be uploaded later: ${(error as Error)?.message ?? error}`);
    } finally {
      state.running = false;
      if (state.again) {
        state.again = false;
        scheduleLogUpload(ctx, delayMs);
      }
    }
  }, delayMs);
}

function checkOptions(options: GetLogsOptions | undefined): GetLogsOptions {
  if (options === undefined) return {};
  if (!isObject(options)) throw new ClientError('INVALID_ARGUMENT', 'getLogs options must be an object { id, limit, where }');
  const { id, limit, where } = options as { id?: unknown; limit?: unknown; where?: unknown };
  if (id !== undefined && !(typeof id === 'number' && Number.isInteger(id) && id > 0))
    throw new ClientError('INVALID_ARGUMENT', 'options.id must be a positive integer (an action id)');
  if (limit !== undefined && !(typeof limit === 'number' && Number.isInteger(limit) && limit > 0 && limit <= MAX_LOG_LIMIT))
    throw new ClientError('INVALID_ARGUMENT', `options.limit must be an integer from 1 to ${MAX_LOG_LIMIT}`);
  if (where !== undefined && !isObject(where)) throw new ClientError('INVALID_ARGUMENT', 'options.where must be an object (a sift query on the record)');
  return options;
}

/** Server and device records together, newest first; device records not uploaded yet have `id: null`. */
export async function getLogs(ctx: ClientContext, options?: GetLogsOptions): Promise<LogsPage> {
  const { id, limit = DEFAULT_LOG_LIMIT, where } = checkOptions(options);
  await uploadDeviceLogs(ctx).catch(() => undefined);
  const remote = await ctx.http.request<LogsPage>('POST', tasksPath(ctx, '/logs'), { json: { id, limit, where } });
  const seen = new Set(remote.logs.map((l) => l.deviceKey).filter(Boolean));
  let local = (await pendingRunLogs(ctx))
    .map((p) => p.log)
    .filter((log) => !seen.has(log.deviceKey) && (LOG_TYPES as readonly string[]).includes(log.type) && (id === undefined || log.data.actionId === id));
  // sift (the lazy query chunk) only when device records wait for the `where`.
  if (where && local.length > 0) {
    const test = (await loadChunk('query', ctx.config().assetsUrl)).compileFilter(where, 'options.where');
    local = local.filter((log) => test(log));
  }
  const logs = [...remote.logs, ...local]
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : (b.id ?? Infinity) - (a.id ?? Infinity)))
    .slice(0, limit);
  return { count: remote.count + local.length, logs };
}
