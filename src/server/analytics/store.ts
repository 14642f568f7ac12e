import type { Database } from '../db/database.js';
import { markLogEvents } from '../db/shared-events.js';

/** Data-access layer of analytics: events as `logs` records, received batch ids in `analytics_batches`. */

export type AnalyticsLogType = 'app.analytics.pageView' | 'app.analytics.event';

export interface AnalyticsRecordInit {
  type: AnalyticsLogType;
  data: Record<string, unknown>;
  createdAt: string;
}

export interface AnalyticsRecord extends AnalyticsRecordInit {
  id: number;
  appId: number;
}

/**
 * Stores the events of a batch as log records, in one transaction; a batch id already received for the app
 * stores nothing (`duplicate: true`). A batch without an id is stored as it comes.
 */
export async function insertAnalyticsBatch(
  db: Database,
  batch: { appId: number; organizationId: number; batchId: string | undefined; events: AnalyticsRecordInit[]; receivedAt: string },
): Promise<{ duplicate: boolean; ids: number[] }> {
  return db.transaction(async (tx) => {
    if (batch.batchId !== undefined) {
      const claimed = await tx.run(
        'INSERT INTO analytics_batches (app_id, batch_id, event_count, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (app_id, batch_id) DO NOTHING',
        [batch.appId, batch.batchId, batch.events.length, batch.receivedAt],
      );
      if (claimed.changes === 0) return { duplicate: true, ids: [] };
    }
    const ids: number[] = [];
    for (const event of batch.events) {
      const row = await tx.get<{ id: number }>('INSERT INTO logs (type, app_id, organization_id, data, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id', [
        event.type,
        batch.appId,
        batch.organizationId,
        JSON.stringify(event.data),
        event.createdAt,
      ]);
      ids.push(row!.id);
    }
    // PostgreSQL with several instances: these events reach the triggers even if this instance dies before emitting.
    await markLogEvents(db, tx, ids);
    return { duplicate: false, ids };
  });
}

/** Newest first. */
export async function listAnalytics(
  db: Database,
  filter: { appId: number; types: readonly AnalyticsLogType[]; limit: number; offset: number },
): Promise<{ total: number; records: AnalyticsRecord[] }> {
  const marks = filter.types.map(() => '?').join(', ');
  const params = [filter.appId, ...filter.types];
  const total = await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM logs WHERE app_id = ? AND type IN (${marks})`, params);
  const rows = await db.all<{ id: number; type: AnalyticsLogType; data: string; created_at: string }>(
    `SELECT id, type, data, created_at FROM logs WHERE app_id = ? AND type IN (${marks}) ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
    [...params, filter.limit, filter.offset],
  );
  return {
    total: Number(total?.n ?? 0),
    records: rows.map((r) => ({ id: r.id, appId: filter.appId, type: r.type, data: JSON.parse(r.data) as Record<string, unknown>, createdAt: r.created_at })),
  };
}

/** Forgets the batch ids received before `before` (ISO): a re-send of such a batch would be stored again. */
export async function pruneAnalyticsBatches(db: Database, before: string): Promise<number> {
  return (await db.run('DELETE FROM analytics_batches WHERE created_at < ?', [before])).changes;
}
