/** Reading action logs (getLogs) and taking in records written by devices. */
import { compileFilter } from '../../filter/tester.js';
import { queryTimeout, startBudget } from '../data-sources/query/filter-entries.js';
import { DEFAULT_LOG_LIMIT, LOG_TYPES, MAX_LOG_LIMIT, MAX_TRACE_LOG_LIMIT, type ActionLog, type LogsPage } from '../../contract/actions.js';
import type { ServerContext } from '../context.js';
import { DEFAULT_SERVER_LIMITS } from '../context.js';
import { HttpError } from '../http/errors.js';
import { checkNesting } from '../http/nesting.js';
import { countLogs, dataWithoutTrace, insertDeviceLog, iterateLogs, type LogSelection } from './log-store.js';
import { getAppRun } from './run-store.js';
import { parseRunId, type ParsedRunId } from './run-view.js';
import { existingActionIds, touchLastRun } from './store.js';

export interface LogQuery {
  id?: number;
  /** Only the record of this run (a server run id, or a device run's key). */
  runId?: ParsedRunId;
  limit?: number;
  where?: Record<string, unknown>;
  /** Keep each record's `data.trace` (left out otherwise). */
  trace?: boolean;
}

const SKIPPED = 'app.task.skipped';
/** Records read per page by a `where`. */
const LOG_PAGE = 100;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads `{ id, runId, limit, where, trace }` from a query string or a JSON body; 400 naming the bad field. `where` (also
 * as JSON in a query string) nests at most `filterDepth` levels (400 NESTING_TOO_DEEP).
 */
export function parseLogQuery(raw: Record<string, unknown>, filterDepth = DEFAULT_SERVER_LIMITS.filterDepth): LogQuery {
  const query: LogQuery = {};
  const int = (name: string, value: unknown, max?: number): number => {
    const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0 || (max !== undefined && n > max))
      throw new HttpError(400, 'INVALID_FIELD', `Field "${name}" must be a positive integer${max ? ` up to ${max}` : ''}`);
    return n;
  };
  if (raw.id !== undefined && raw.id !== null) query.id = int('id', raw.id);
  if (raw.runId !== undefined && raw.runId !== null) query.runId = parseRunId(raw.runId, 'Field "runId"');
  if (raw.trace !== undefined && raw.trace !== null) {
    if (raw.trace !== true && raw.trace !== false && raw.trace !== 'true' && raw.trace !== 'false')
      throw new HttpError(400, 'INVALID_FIELD', 'Field "trace" must be true or false');
    query.trace = raw.trace === true || raw.trace === 'true';
  }
  if (raw.limit !== undefined && raw.limit !== null) query.limit = int('limit', raw.limit, query.trace ? MAX_TRACE_LOG_LIMIT : MAX_LOG_LIMIT);
  let where = raw.where;
  if (typeof where === 'string') {
    try {
      where = JSON.parse(where);
    } catch {
      throw new HttpError(400, 'INVALID_FIELD', 'Field "where" must be a JSON object');
    }
  }
  if (where !== undefined && where !== null) {
    if (!isObject(where)) throw new HttpError(400, 'INVALID_FIELD', 'Field "where" must be an object (a sift query on the record)');
    checkNesting(where, filterDepth, 'Field "where"', 'filterDepth');
    try {
      compileFilter(where);
    } catch (error) {
      throw new HttpError(400, 'INVALID_FIELD', `Field "where" is not a valid query: ${(error as Error).message}`);
    }
    query.where = where;
  }
  return query;
}

/** The records a query selects before `where`: of an action, of a run (a server run's log id: -1, none, before it is logged). */
async function selectionOf(ctx: ServerContext, appId: number, query: LogQuery): Promise<LogSelection> {
  const selection: LogSelection = { actionId: query.id };
  if (query.runId && 'deviceKey' in query.runId) selection.deviceKey = query.runId.deviceKey;
  else if (query.runId) selection.logId = (await getAppRun(ctx.db, appId, query.runId.runId))?.logId ?? -1;
  return selection;
}

/** A record as getLogs answers it: without its trace unless asked for. */
const shaped = (log: ActionLog, trace: boolean | undefined): ActionLog => {
  if (!trace && log.data && 'trace' in log.data) delete log.data.trace;
  return log;
};

/**
 * Whether a `where` may read a record's trace: a field path `data`, `data.trace` or below it, at its top or in its
 * `$and`/`$or`/`$nor`, or any other top-level operator (which could read the whole record).
 */
export function namesTrace(where: Record<string, unknown>): boolean {
  return Object.entries(where).some(([key, value]) => {
    if (key === '$and' || key === '$or' || key === '$nor') return !Array.isArray(value) || value.some((w) => !isObject(w) || namesTrace(w));
    if (key.startsWith('$')) return true;
    return key === 'data' || key === 'data.trace' || key.startsWith('data.trace.');
  });
}

/**
 * Newest first; `count` is the number of matching records before `limit`. `where` sees the whole record (its
 * trace too); the answer holds traces only with `trace: true`.
 */
export async function readLogs(ctx: ServerContext, appId: number, query: LogQuery): Promise<LogsPage> {
  const limit = Math.min(query.limit ?? DEFAULT_LOG_LIMIT, query.trace ? MAX_TRACE_LOG_LIMIT : MAX_LOG_LIMIT);
  const selection = await selectionOf(ctx, appId, query);
  if (!query.where)
    // One transaction: the count and the page see the same records, even while runs are logging.
    return ctx.db.transaction(async (tx) => {
      const logs: ActionLog[] = [];
      const dataSql = query.trace ? undefined : dataWithoutTrace(ctx.db.dialect);
      for await (const log of iterateLogs(tx, appId, { ...selection, pageSize: Math.min(limit, 500), dataSql })) {
        logs.push(shaped(log, query.trace));
        if (logs.length >= limit) break;
      }
      return { count: await countLogs(tx, appId, selection), logs };
    });
  const test = compileFilter(query.where) as (log: ActionLog) => boolean;
  const logs: ActionLog[] = [];
  let count = 0;
  // Skipped occurrences (overlap, missed under `skip`) are shown only to a `where` that names their type.
  const types = JSON.stringify(query.where.type ?? null).includes(SKIPPED) ? [...LOG_TYPES, SKIPPED] : LOG_TYPES;
  // Every record is read for the count: under the query time budget (422 QUERY_TIMEOUT past it), giving the event
  // loop to other requests between pages, so an app with many records holds no other tenant for long.
  const budget = startBudget(ctx.limits.aggregateTimeoutMs);
  let read = 0;
  // A `where` that names no trace is answered alike by the records without their traces, which the database drops
  // (a trace holds up to 256 KB; at 100,000 small records this took the read from 4.8 to 4.1 s, docs/benchmarks.md).
  const dataSql = query.trace || namesTrace(query.where) ? undefined : dataWithoutTrace(ctx.db.dialect);
  // Pages of 100: a record may hold a trace of up to 256 KB, read and tested, then dropped or shaped.
  for await (const log of iterateLogs(ctx.db, appId, { ...selection, types, pageSize: LOG_PAGE, dataSql })) {
    if (++read % LOG_PAGE === 0) await new Promise((resolve) => setImmediate(resolve));
    if ((read & 7) === 0 && Date.now() > budget.deadline) throw queryTimeout(budget);
    if (!test(log)) continue;
    count++;
    if (logs.length < limit) logs.push(shaped(log, query.trace));
  }
  return { count, logs };
}

const MAX_UPLOAD = 500;
/** A device run's duration as stored, at most: runs end at `limits.runTimeoutMs` (120 s by default); longer uploads are clamped to a day. */
const MAX_DURATION_MS = 86_400_000;

/** `POST tasks/logs { logs: [...] }`: records of device runs; idempotent by `deviceKey`. */
export async function uploadDeviceLogs(
  ctx: ServerContext,
  app: { id: number; organizationId: number },
  records: unknown,
): Promise<{ ids: number[]; created: number }> {
  if (!Array.isArray(records)) throw new HttpError(400, 'INVALID_FIELD', 'Field "logs" must be an array');
  if (records.length > MAX_UPLOAD) throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `At most ${MAX_UPLOAD} log records per upload`);
  const checked = records.map((r, i) => {
    const at = `logs[${i}]`;
    if (!isObject(r)) throw new HttpError(400, 'INVALID_FIELD', `${at} must be an object`);
    if (typeof r.deviceKey !== 'string' || !/^[\w.:-]{8,100}$/.test(r.deviceKey))
      throw new HttpError(400, 'INVALID_FIELD', `${at}.deviceKey must be a string of 8-100 letters, digits, ".", ":", "-" or "_"`);
    if (typeof r.type !== 'string' || !(LOG_TYPES as readonly string[]).includes(r.type))
      throw new HttpError(400, 'INVALID_FIELD', `${at}.type must be one of ${LOG_TYPES.join(', ')}`);
    if (typeof r.createdAt !== 'string' || Number.isNaN(Date.parse(r.createdAt)))
      throw new HttpError(400, 'INVALID_FIELD', `${at}.createdAt must be an ISO timestamp`);
    const data = r.data;
    if (!isObject(data)) throw new HttpError(400, 'INVALID_FIELD', `${at}.data must be an object`);
    if (data.mode !== 'on-demand' && data.mode !== 'scheduled') throw new HttpError(400, 'INVALID_FIELD', `${at}.data.mode must be on-demand or scheduled`);
    if (typeof data.duration !== 'number' || !(data.duration >= 0)) throw new HttpError(400, 'INVALID_FIELD', `${at}.data.duration must be a number of ms`);
    if (!Number.isSafeInteger(data.actionId) || (data.actionId as number) < 1)
      throw new HttpError(400, 'INVALID_FIELD', `${at}.data.actionId must be a positive integer`);
    return {
      deviceKey: r.deviceKey,
      type: r.type,
      createdAt: new Date(Date.parse(r.createdAt)).toISOString(),
      // Clamped, not refused: a refused record is dropped by the device for good (a sleep or clock jump mid-run).
      data: { ...data, duration: Math.min(data.duration, MAX_DURATION_MS), source: 'device' } as Record<string, unknown>,
    };
  });
  // One look-up per distinct action (a batch is usually the runs of a few actions), reading ids only.
  const known = await existingActionIds(ctx.db, app.id, [...new Set(checked.map((r) => r.data.actionId as number))]);
  const unknown = checked.findIndex((r) => !known.has(r.data.actionId as number));
  if (unknown >= 0)
    throw new HttpError(422, 'ACTION_NOT_FOUND', `logs[${unknown}].data.actionId: no action ${checked[unknown]!.data.actionId} in app ${app.id}`);
  return ctx.db.transaction(async (tx) => {
    const ids: number[] = [];
    let created = 0;
    // Each action's last run: the latest record created, one update per action.
    const lastRun = new Map<number, string>();
    for (const r of checked) {
      const actionId = r.data.actionId as number;
      const result = await insertDeviceLog(tx, { ...r, appId: app.id, organizationId: app.organizationId, actionId });
      ids.push(result.id);
      if (result.created) {
        created++;
        if (!(r.createdAt <= (lastRun.get(actionId) ?? ''))) lastRun.set(actionId, r.createdAt);
      }
    }
    // In id order: two uploads at once lock the same rows in the same order (no deadlock on PostgreSQL).
    for (const [actionId, at] of [...lastRun].sort((a, b) => a[0] - b[0])) await touchLastRun(tx, actionId, at);
    return { ids, created };
  });
}
