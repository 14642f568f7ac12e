/**
 * Client.App.Actions.getLogs, in the lazy `runs` chunk (few screens read run logs; client tokens may not):
 * the backend's records and this device's records not uploaded yet, together.
 */
import type { RunsHost } from './runs-host.js';
import {
  DEFAULT_LOG_LIMIT,
  DEVICE_RUN_PREFIX,
  LOG_TYPES,
  MAX_LOG_LIMIT,
  MAX_TRACE_LOG_LIMIT,
  type GetLogsOptions,
  type LogsPage,
} from '../contract/actions.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const positive = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

function checkOptions({ ClientError }: RunsHost, options: GetLogsOptions | undefined): GetLogsOptions {
  if (options === undefined) return {};
  if (!isObject(options)) throw new ClientError('INVALID_ARGUMENT', 'getLogs options must be an object { id, runId, limit, where, trace }');
  const { id, runId, limit, where, trace } = options as { id?: unknown; runId?: unknown; limit?: unknown; where?: unknown; trace?: unknown };
  if (trace !== undefined && typeof trace !== 'boolean') throw new ClientError('INVALID_ARGUMENT', 'options.trace must be true or false');
  const max = trace ? MAX_TRACE_LOG_LIMIT : MAX_LOG_LIMIT;
  if (id !== undefined && !positive(id)) throw new ClientError('INVALID_ARGUMENT', 'options.id must be a positive integer (an action id)');
  if (runId !== undefined && !positive(runId) && !(typeof runId === 'string' && runId.startsWith(DEVICE_RUN_PREFIX)))
    throw new ClientError('INVALID_ARGUMENT', 'options.runId must be a run id: a server run id (a positive integer) or a device run id ("dev-…")');
  if (limit !== undefined && !(positive(limit) && (limit as number) <= max))
    throw new ClientError('INVALID_ARGUMENT', `options.limit must be an integer from 1 to ${max}${trace ? ' with trace' : ''}`);
  if (where !== undefined && !isObject(where)) throw new ClientError('INVALID_ARGUMENT', 'options.where must be an object (a sift query on the record)');
  return options;
}

/** Server and device records together, newest first; device records not uploaded yet have `id: null`. */
export async function getLogs(host: RunsHost, options?: GetLogsOptions): Promise<LogsPage> {
  const { ctx } = host;
  const { id, runId, limit = DEFAULT_LOG_LIMIT, where, trace } = checkOptions(host, options);
  await host.uploadDeviceLogs().catch(() => undefined);
  const remote = await ctx.http.request<LogsPage>('POST', `v1/apps/${ctx.appId()}/tasks/logs`, { json: { id, runId, limit, where, trace } });
  const seen = new Set(remote.logs.map((l) => l.deviceKey).filter(Boolean));
  let local = (await host.pendingRunLogs())
    .map((p) => p.log)
    .filter(
      (log) =>
        !seen.has(log.deviceKey) &&
        (LOG_TYPES as readonly string[]).includes(log.type) &&
        (id === undefined || log.data.actionId === id) &&
        (runId === undefined || log.deviceKey === runId),
    );
  // sift (the lazy query chunk) only when device records wait for the `where`.
  if (where && local.length > 0) {
    const test = await host.compileFilter(where, 'options.where');
    local = local.filter((log) => test(log));
  }
  // Copies: the records stay as they are on the device.
  if (!trace) local = local.map(({ data: { trace: _trace, ...data }, ...log }) => ({ ...log, data }));
  const logs = [...remote.logs, ...local]
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : (b.id ?? Infinity) - (a.id ?? Infinity)))
    .slice(0, limit);
  return { count: remote.count + local.length, logs };
}
