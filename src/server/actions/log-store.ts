/** SQL of action run log records in the generic `logs` table. */
import type { Queryable } from '../db/database.js';
import { LOG_TYPES, type ActionLog } from '../../contract/actions.js';

export interface NewLog {
  type: string;
  appId: number;
  organizationId: number;
  actionId: number;
  data: Record<string, unknown>;
  createdAt: string;
  deviceKey?: string | null;
  /** The key of the triggered run this record stands for (a skip): one record per key and app. */
  triggerKey?: string | null;
}

export async function insertLog(db: Queryable, log: NewLog): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO logs (type, app_id, organization_id, action_id, device_key, trigger_key, data, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [log.type, log.appId, log.organizationId, log.actionId, log.deviceKey ?? null, log.triggerKey ?? null, JSON.stringify(log.data), log.createdAt],
  );
  return row!.id;
}

/** Whether a record stands for the triggered run of this key already (a skip recorded by an earlier delivery). */
export async function hasTriggerLog(db: Queryable, appId: number, triggerKey: string): Promise<boolean> {
  return (await db.get('SELECT id FROM logs WHERE app_id = ? AND trigger_key = ?', [appId, triggerKey])) !== undefined;
}

/** Inserts a device record unless one with the same key exists; returns its id either way. */
export async function insertDeviceLog(db: Queryable, log: NewLog & { deviceKey: string }): Promise<{ id: number; created: boolean }> {
  const existing = await db.get<{ id: number }>('SELECT id FROM logs WHERE app_id = ? AND device_key = ?', [log.appId, log.deviceKey]);
  if (existing) return { id: existing.id, created: false };
  return { id: await insertLog(db, log), created: true };
}

type RawLog = { id: number; type: string; data: string; createdAt: string; deviceKey: string | null };

const toLog = (r: RawLog): ActionLog => {
  const log: ActionLog = { id: r.id, createdAt: r.createdAt, type: r.type as ActionLog['type'], data: JSON.parse(r.data) as ActionLog['data'] };
  if (r.deviceKey) log.deviceKey = r.deviceKey;
  return log;
};

/** Which action log records of an app: of one action, of one run (its log id, or a device run's key), of these types. */
export interface LogSelection {
  actionId?: number;
  /** Only this record (the log of a server run). */
  logId?: number;
  /** Only the record a device uploaded under this key (a device run). */
  deviceKey?: string;
  types?: readonly string[];
}

/** The SQL conditions of a selection past app and types; pushes their parameters. */
function narrow(options: LogSelection, params: (string | number)[]): string {
  let sql = '';
  for (const [column, value] of [
    ['action_id', options.actionId],
    ['id', options.logId],
    ['device_key', options.deviceKey],
  ] as const)
    if (value !== undefined) {
      sql += ` AND ${column} = ?`;
      params.push(value);
    }
  return sql;
}

/** The record a device uploaded under `deviceKey` (its run id), any type. */
export async function getDeviceLog(db: Queryable, appId: number, deviceKey: string): Promise<ActionLog | undefined> {
  const row = await db.get<RawLog>(
    'SELECT id, type, data, created_at AS createdAt, device_key AS deviceKey FROM logs WHERE app_id = ? AND device_key = ? AND action_id IS NOT NULL',
    [appId, deviceKey],
  );
  return row && toLog(row);
}

/**
 * Action log records of an app, newest first, in pages (callers filter with
 * sift in JS and keep paging until they have enough).
 */
export async function* iterateLogs(
  db: Queryable,
  appId: number,
  options: LogSelection & { pageSize?: number /** The SQL read for `data` (e.g. without its trace). */; dataSql?: string },
): AsyncGenerator<ActionLog> {
  const types = options.types ?? LOG_TYPES;
  const pageSize = options.pageSize ?? 500;
  const typeList = types.map(() => '?').join(', ');
  let cursor: { createdAt: string; id: number } | undefined;
  for (;;) {
    const params: (string | number)[] = [appId, ...types];
    let sql = `SELECT id, type, ${options.dataSql ?? 'data'} AS data, created_at AS createdAt, device_key AS deviceKey FROM logs
      WHERE app_id = ? AND type IN (${typeList}) AND action_id IS NOT NULL`;
    sql += narrow(options, params);
    if (cursor) {
      // The bound first, as a range the index seeks to (an OR of the two cases scanned from the newest record on
      // every page: 6.7 ms against 0.4 ms a page at 200,000 records), then the ties.
      sql += ' AND created_at <= ? AND (created_at < ? OR id < ?)';
      params.push(cursor.createdAt, cursor.createdAt, cursor.id);
    }
    sql += ' ORDER BY created_at DESC, id DESC LIMIT ?';
    params.push(pageSize);
    const rows = await db.all<RawLog>(sql, params);
    for (const row of rows) yield toLog(row);
    if (rows.length < pageSize) return;
    const last = rows[rows.length - 1]!;
    cursor = { createdAt: last.createdAt, id: last.id };
  }
}

/**
 * `data` without its `trace`, read by the database (a trace holds up to 256 KB of values; a page of 500 records
 * need not be read whole to be answered without them). jsonb refuses `\u0000` and a lone UTF-16 surrogate
 * (`\ud800`, which JSON.stringify writes for half an emoji) in strings: a record with either escape (or any
 * surrogate escape) is read whole, and its trace dropped in JS. PostgreSQL answers the others with jsonb's key order.
 */
export const dataWithoutTrace = (dialect: 'sqlite' | 'postgres'): string =>
  dialect === 'sqlite'
    ? "json_remove(data, '$.trace')"
    : "CASE WHEN strpos(data, '\\u0000') > 0 OR data ~* '\\\\ud[89a-f]' THEN data ELSE (data::jsonb - 'trace')::text END";

export async function countLogs(db: Queryable, appId: number, options: LogSelection): Promise<number> {
  const types = options.types ?? LOG_TYPES;
  const params: (string | number)[] = [appId, ...types];
  const sql = `SELECT COUNT(*) AS n FROM logs WHERE app_id = ? AND type IN (${types.map(() => '?').join(', ')}) AND action_id IS NOT NULL${narrow(options, params)}`;
  return Number((await db.get<{ n: number }>(sql, params))?.n ?? 0);
}
