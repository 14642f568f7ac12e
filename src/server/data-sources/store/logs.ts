import type { Queryable } from '../../db/database.js';

/** Data-access layer of the generic `logs` table (data source entry events; app action runs use it too). */

export interface LogInit {
  type: string;
  appId: number | null;
  organizationId: number | null;
  dataSourceId?: number | null;
  dataSourceEntryId?: number | null;
  data: Record<string, unknown>;
  createdAt: string;
}

export interface LogRecord extends Required<Omit<LogInit, 'data'>> {
  id: number;
  data: Record<string, unknown>;
}

export async function insertLog(db: Queryable, log: LogInit): Promise<number> {
  const row = await db.get<{ id: number }>(
    `INSERT INTO logs (type, app_id, organization_id, data_source_id, data_source_entry_id, data, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    [log.type, log.appId, log.organizationId, log.dataSourceId ?? null, log.dataSourceEntryId ?? null, JSON.stringify(log.data), log.createdAt],
  );
  return row!.id;
}

/** Inserts many log records with multi-row statements; returns their ids in the order given. */
export async function insertLogs(db: Queryable, logs: readonly LogInit[]): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < logs.length; start += 200) {
    const chunk = logs.slice(start, start + 200);
    const params: (string | number | null)[] = [];
    for (const log of chunk)
      params.push(log.type, log.appId, log.organizationId, log.dataSourceId ?? null, log.dataSourceEntryId ?? null, JSON.stringify(log.data), log.createdAt);
    const rows = await db.all<{ id: number }>(
      `INSERT INTO logs (type, app_id, organization_id, data_source_id, data_source_entry_id, data, created_at)
       VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')} RETURNING id`,
      params,
    );
    for (const id of rows.map((r) => r.id).sort((a, b) => a - b)) ids.push(id);
  }
  return ids;
}

interface LogRow {
  id: number;
  type: string;
  app_id: number | null;
  organization_id: number | null;
  data_source_id: number | null;
  data_source_entry_id: number | null;
  data: string;
  created_at: string;
}

/** Newest first. */
export async function listLogs(db: Queryable, filter: { dataSourceId?: number; type?: string; limit?: number }): Promise<LogRecord[]> {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (filter.dataSourceId !== undefined) {
    where.push('data_source_id = ?');
    params.push(filter.dataSourceId);
  }
  if (filter.type !== undefined) {
    where.push('type = ?');
    params.push(filter.type);
  }
  const rows = await db.all<LogRow>(
    `SELECT id, type, app_id, organization_id, data_source_id, data_source_entry_id, data, created_at FROM logs
     ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`,
    [...params, filter.limit ?? 100],
  );
  return rows.map((r) => ({
    id: r.id,
    type: r.type,
    appId: r.app_id,
    organizationId: r.organization_id,
    dataSourceId: r.data_source_id,
    dataSourceEntryId: r.data_source_entry_id,
    data: JSON.parse(r.data) as Record<string, unknown>,
    createdAt: r.created_at,
  }));
}
