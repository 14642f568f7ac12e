import type { Context, Next } from 'hono';
import type { App, AppEnv, ServerContext } from '../context.js';
import { intParam, requireKind } from '../http/auth.js';
import { readJsonObject } from '../http/body.js';
import { HttpError } from '../http/errors.js';
import { idempotencyKey } from '../http/idempotency.js';
import { checkFilterFields } from '../http/nesting.js';
import { compilePage } from '../actions/compile-page.js';
import { parseLogQuery, readLogs, uploadDeviceLogs } from '../actions/logs.js';
import { registerPageRoutes } from '../actions/pages-routes.js';
import { definitionFor, outcomeOf, parseRunBody, queueManualRun } from '../actions/runs.js';
import { publicRunInfo, publicTrace, readRun, readRunByKey } from '../actions/run-view.js';
import type { ActionsRuntime } from '../actions/runtime.js';
import { changeAction, createAction, publishAction, removeAction, requireAction } from '../actions/service.js';
import { listActions, toAction } from '../actions/store.js';
import { loadApp } from './apps.js';
import { jsonWithETag } from '../http/etag.js';
import type { Action } from '../../contract/actions.js';

const base = '/v1/apps/:appId/tasks';

/** A client token: the page's public token (docs/security.md). */
const isClient = (c: Context<AppEnv>) => c.get('auth')?.kind === 'client';

/** Words after `tasks/` that belong to other routes (the function catalog of the engine). */
const RESERVED = new Set(['functions']);

/**
 * The `environment` a request reads or runs actions as. Client tokens get the live (published) copies only:
 * without `environment` they read the live view, and `viewer` (working copies) is refused (403).
 */
function environmentOf(c: Context<AppEnv>, environment: string | undefined): string | undefined {
  if (environment === 'viewer') requireKind(c, ['api', 'studio'], 'read or run the working copies of actions (environment viewer)');
  return (environment === undefined || environment === '') && c.get('auth')?.kind === 'client' ? 'live' : environment;
}

/** Routes of app actions, runs, logs, function catalog, screens, debug compile page. */
export function registerActionRoutes(app: App, ctx: ServerContext, runtime: ActionsRuntime): void {
  /**
   * The list answers a strong ETag (hash of the body) and 304 to a matching If-None-Match. `view=definitions`
   * leaves out the run state (lastRunAt, nextRunAt), so its ETag changes only when definitions do: devices
   * revalidate their cached list with it at every page load (docs/analytics.md).
   */
  app.get(base, async (c) => {
    const record = await loadApp(ctx, c);
    const environment = environmentOf(c, c.req.query('environment'));
    const view = c.req.query('view') || undefined;
    if (view !== undefined && view !== 'definitions') throw new HttpError(400, 'INVALID_PARAMETER', 'Query "view" must be definitions');
    const rows = await listActions(ctx.db, record.id);
    let actions: Action[];
    if (environment === undefined || environment === '') actions = rows.map((row) => toAction(row));
    else {
      if (environment !== 'live' && environment !== 'viewer') throw new HttpError(400, 'INVALID_PARAMETER', 'Query "environment" must be live or viewer');
      // The actions that environment can run, each as the copy it runs.
      const runnable = rows.filter((row) => row.active && (environment === 'viewer' || row.published));
      actions = runnable.map((row) => toAction(row, environment === 'live' ? 'published' : 'working'));
    }
    if (view) actions = actions.map(({ lastRunAt: _last, nextRunAt: _next, ...definition }) => definition as Action);
    return jsonWithETag(c, { actions });
  });

  app.post(base, async (c) => {
    const record = await loadApp(ctx, c);
    const row = await createAction(ctx, record, withCheckedTriggers(ctx, await readJsonObject(c)));
    return c.json({ action: toAction(row) }, 201);
  });

  app.get(`${base}/logs`, async (c) => {
    const record = await loadApp(ctx, c);
    return c.json(await readLogs(ctx, record.id, parseLogQuery(c.req.query(), ctx.limits.filterDepth)));
  });

  /** `{ id, limit, where }` reads logs; `{ logs: [...] }` uploads device records (idempotent by deviceKey). */
  app.post(`${base}/logs`, async (c) => {
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c, { required: false });
    if (body.logs !== undefined) return c.json(await uploadDeviceLogs(ctx, record, body.logs), 201);
    // Run logs hold the results of every user's runs: a client token only uploads its device's records.
    requireKind(c, ['api', 'studio'], 'read run logs (a client token only uploads device logs)');
    return c.json(await readLogs(ctx, record.id, parseLogQuery(body, ctx.limits.filterDepth)));
  });

  /**
   * The run queued with the `Idempotency-Key` header (a run a device queued offline, sent by another tab). A client
   * token gets a server run's trace without the nodes' inputs and outputs (publicTrace).
   */
  app.get(`${base}/runs`, async (c) => {
    const record = await loadApp(ctx, c);
    const run = await readRunByKey(ctx, record.id, c.req.header('Idempotency-Key'), isClient(c));
    return c.json({ run: isClient(c) ? publicRunInfo(run) : run });
  });

  /**
   * One run: status, timings, result or error, trace (docs/actions.md "Run handles"). `:runId` is a server run id
   * or a device run id (`dev-…`). A client token reads a server run only with the `Idempotency-Key` it was queued
   * with, and its trace without the nodes' inputs and outputs.
   */
  app.get(`${base}/runs/:runId`, async (c) => {
    const record = await loadApp(ctx, c);
    const client = isClient(c);
    const run = await readRun(ctx, record.id, c.req.param('runId'), { needsKey: client, key: c.req.header('Idempotency-Key') });
    return c.json({ run: client ? publicRunInfo(run) : run });
  });

  /**
   * One action, with a strong ETag (hash of the body) and 304 to a matching If-None-Match, given only after the
   * caller's access was checked (a token that may not read it gets its 4xx, never a 304). `view=definitions` leaves
   * out the run state (lastRunAt, nextRunAt), so its ETag changes only with the definition: what devices ask for
   * before a run, to revalidate the copy they hold (docs/actions.md "Action copies on the device").
   */
  app.get(`${base}/:idOrName`, async (c: Context<AppEnv>, next: Next) => {
    if (RESERVED.has(c.req.param('idOrName') ?? '')) return next();
    const record = await loadApp(ctx, c);
    const row = await requireAction(ctx, record.id, c.req.param('idOrName')!);
    const environment = environmentOf(c, c.req.query('environment'));
    const view = c.req.query('view') || undefined;
    if (view !== undefined && view !== 'definitions') throw new HttpError(400, 'INVALID_PARAMETER', 'Query "view" must be definitions');
    let action: Action;
    if (environment === undefined || environment === '') action = toAction(row);
    else {
      if (environment !== 'live' && environment !== 'viewer') throw new HttpError(400, 'INVALID_PARAMETER', 'Query "environment" must be live or viewer');
      // The copy that environment runs (refused when it cannot run: inactive, or unpublished for live).
      definitionFor(row, environment);
      action = toAction(row, environment === 'live' ? 'published' : 'working');
    }
    if (view) {
      const { lastRunAt: _last, nextRunAt: _next, ...definition } = action;
      action = definition as Action;
    }
    return jsonWithETag(c, { action });
  });

  app.put(`${base}/:idOrName`, async (c) => {
    const record = await loadApp(ctx, c);
    const row = await changeAction(ctx, record.id, c.req.param('idOrName'), withCheckedTriggers(ctx, await readJsonObject(c)));
    return c.json({ action: toAction(row) });
  });

  app.delete(`${base}/:idOrName`, async (c) => {
    const record = await loadApp(ctx, c);
    await removeAction(ctx, record.id, c.req.param('idOrName'));
    return c.json({});
  });

  app.post(`${base}/:id/publish`, async (c) => {
    const record = await loadApp(ctx, c);
    const id = intParam(c, 'id');
    const body = await readJsonObject(c);
    if (typeof body.publish !== 'boolean') throw new HttpError(400, 'INVALID_FIELD', 'Field "publish" must be a boolean');
    const row = await publishAction(ctx, record.id, String(id), body.publish);
    return c.json({ action: toAction(row) });
  });

  /** `{ payload, wait, environment }`: 202 once durably queued, or (wait) the result. Honours `Idempotency-Key`. */
  app.post(`${base}/:idOrName/run`, async (c) => {
    const record = await loadApp(ctx, c);
    const body = parseRunBody(ctx, await readJsonObject(c, { required: false }));
    environmentOf(c, body.environment);
    const row = await requireAction(ctx, record.id, c.req.param('idOrName'));
    const key = idempotencyKey(c);
    // The backend's own keys (scheduler, log triggers) are not a caller's: a guessed one would answer that run.
    if (key && /^(schedule|log):/.test(key))
      throw new HttpError(400, 'INVALID_HEADER', 'Header "Idempotency-Key" must not start with "schedule:" or "log:" (keys of runs the backend queues)');
    const { runId } = await queueManualRun(ctx, row, { payload: body.payload, environment: body.environment, idempotencyKey: key });
    runtime.worker.wake();
    if (!body.wait) return c.json({ runId, status: 'queued' }, 202);
    const run = await runtime.waiters.wait(ctx, runId, ctx.limits.runTimeoutMs + 10_000);
    const outcome = run && outcomeOf(run);
    if (!run || !outcome) return c.json({ runId, status: run?.status ?? 'queued' }, 202);
    if (outcome.ok) return c.json({ runId, status: run.status, result: outcome.result ?? null, duration: outcome.durationMs, logId: run.logId });
    const { code, errorType, errorMessage, trace } = outcome.error;
    throw new HttpError(code === 'RESULT_TOO_LARGE' ? 413 : 422, code || 'RUN_FAILED', errorMessage, {
      errorType,
      trace: isClient(c) ? publicTrace(trace.length ? trace : outcome.trace) : trace.length ? trace : outcome.trace,
      runId,
      logId: run.logId,
    });
  });

  /** Debug page (`?html`): `?token=` is exchanged for a ticket (303), the page then opens with it (src/server/actions/compile-page.ts). */
  app.get(`${base}/:id/compile`, (c) => compilePage(ctx, c));

  registerPageRoutes(app, ctx);
}

/** An action body whose trigger `where`s nest at most `limits.filterDepth` levels (400 NESTING_TOO_DEEP otherwise). */
function withCheckedTriggers(ctx: ServerContext, body: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(body.triggers)) body.triggers.forEach((t, i) => checkFilterFields(t, ctx.limits.filterDepth, ['where'], `triggers[${i}].`));
  return body;
}
