import type { App, ServerContext } from '../context.js';
import { insertAnalyticsBatch, listAnalytics, pruneAnalyticsBatches, type AnalyticsLogType, type AnalyticsRecordInit } from '../analytics/store.js';
import { readJsonObject } from '../http/body.js';
import { HttpError } from '../http/errors.js';
import { loadApp } from './apps.js';

/** Days a received batch id is remembered (a re-send within them is stored once). */
export const DEFAULT_BATCH_ID_DAYS = 30;
/** Most events in one batch. */
export const MAX_ANALYTICS_BATCH = 1000;
/** Largest `data` of one event, characters of JSON (the client refuses larger ones first). */
export const MAX_ANALYTICS_EVENT_CHARS = 16_384;

const TYPES: Record<string, AnalyticsLogType> = {
  'analytics.pageView': 'app.analytics.pageView',
  'analytics.event': 'app.analytics.event',
};
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const invalid = (field: string, message: string) => new HttpError(400, 'INVALID_FIELD', `Field "${field}" ${message}`, { field });

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readEvents(body: Record<string, unknown>, now: string): AnalyticsRecordInit[] {
  const events = body.events;
  if (!Array.isArray(events) || events.length === 0) throw invalid('events', 'must be a non-empty array of events');
  if (events.length > MAX_ANALYTICS_BATCH)
    throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `A batch holds at most ${MAX_ANALYTICS_BATCH} events, got ${events.length}`);
  return events.map((event, i) => {
    const at = `events[${i}]`;
    if (!isPlainObject(event)) throw invalid(at, 'must be an object');
    const type = typeof event.type === 'string' ? TYPES[event.type] : undefined;
    if (!type) throw invalid(`${at}.type`, `must be "analytics.pageView" or "analytics.event", got ${JSON.stringify(event.type)}`);
    const data = event.data ?? {};
    if (!isPlainObject(data)) throw invalid(`${at}.data`, 'must be an object');
    if (JSON.stringify(data).length > MAX_ANALYTICS_EVENT_CHARS)
      throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `Field "${at}.data" is over ${MAX_ANALYTICS_EVENT_CHARS} characters of JSON`, { field: `${at}.data` });
    if (type === 'app.analytics.event')
      for (const field of ['category', 'action'])
        if (typeof data[field] !== 'string' || data[field] === '') throw invalid(`${at}.data.${field}`, 'must be a non-empty string');
    let createdAt = now;
    if (event.createdAt !== undefined) {
      if (typeof event.createdAt !== 'string' || !ISO.test(event.createdAt) || Number.isNaN(Date.parse(event.createdAt)))
        throw invalid(`${at}.createdAt`, 'must be an ISO 8601 timestamp');
      createdAt = new Date(event.createdAt).toISOString();
    }
    return { type, data, createdAt };
  });
}

/**
 * `POST v1/apps/:appId/analytics` `{ batchId?, events: [{ type, data, createdAt? }] }`: stores each event as
 * a log record (`app.analytics.pageView` / `app.analytics.event`; `createdAt` is the device's time of the
 * event). A `batchId` (or `Idempotency-Key` header) already received is answered again without storing twice.
 * `GET v1/apps/:appId/analytics?type=&limit=&offset=`: the stored events, newest first.
 */
/** Forgets received batch ids after `limits.analyticsBatchIdDays` (default 30 days): at every `tick()` and hourly. */
export function pruneAnalyticsBatchesRegularly(ctx: ServerContext): void {
  const prune = async () => {
    const days = ctx.limits.analyticsBatchIdDays ?? DEFAULT_BATCH_ID_DAYS;
    await pruneAnalyticsBatches(ctx.db, new Date(ctx.clock() - days * 86_400_000).toISOString());
  };
  ctx.onTick(prune);
  const timer = setInterval(() => prune().catch((error) => console.error('[in-app-runtime server] pruning analytics batch ids failed', error)), 3_600_000);
  timer.unref?.();
  ctx.onClose(() => clearInterval(timer));
}

export function registerAnalyticsRoutes(app: App, ctx: ServerContext): void {
  app.post('/v1/apps/:appId/analytics', async (c) => {
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c);
    const batchId = body.batchId ?? c.req.header('Idempotency-Key') ?? undefined;
    if (batchId !== undefined && (typeof batchId !== 'string' || batchId === '' || batchId.length > 200))
      throw invalid('batchId', 'must be a non-empty string of at most 200 characters');
    const now = ctx.nowIso();
    const events = readEvents(body, now);
    const { duplicate, ids } = await insertAnalyticsBatch(ctx.db, {
      appId: record.id,
      organizationId: record.organizationId,
      batchId,
      events,
      receivedAt: now,
    });
    if (!duplicate)
      events.forEach((event, i) =>
        ctx.bus.emit({ id: ids[i], type: event.type, appId: record.id, organizationId: record.organizationId, data: event.data, createdAt: event.createdAt }),
      );
    return c.json({ accepted: duplicate ? 0 : events.length, duplicate });
  });

  app.get('/v1/apps/:appId/analytics', async (c) => {
    const record = await loadApp(ctx, c);
    const type = c.req.query('type');
    let types: AnalyticsLogType[] = Object.values(TYPES);
    if (type !== undefined) {
      const one = TYPES[type] ?? TYPES[`analytics.${type}`];
      if (!one) throw new HttpError(400, 'INVALID_PARAMETER', `Query parameter "type" must be pageView or event, got "${type}"`);
      types = [one];
    }
    const number = (name: string, fallback: number, max: number) => {
      const raw = c.req.query(name);
      if (raw === undefined) return fallback;
      if (!/^\d+$/.test(raw) || Number(raw) > max)
        throw new HttpError(400, 'INVALID_PARAMETER', `Query parameter "${name}" must be an integer from 0 to ${max}, got "${raw}"`);
      return Number(raw);
    };
    const limit = number('limit', 100, 1000);
    const offset = number('offset', 0, Number.MAX_SAFE_INTEGER);
    const { total, records } = await listAnalytics(ctx.db, { appId: record.id, types, limit, offset });
    return c.json({
      events: records.map((r) => ({
        id: r.id,
        type: r.type === 'app.analytics.pageView' ? 'analytics.pageView' : 'analytics.event',
        data: r.data,
        createdAt: r.createdAt,
      })),
      pagination: { total, limit, offset },
    });
  });
}
