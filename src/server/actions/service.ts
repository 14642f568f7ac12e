/** Action management (create, update, remove, publish) on top of the store; used by the routes. */
import type { ActionDefinition, ActionInput, ActionUpdate } from '../../contract/actions.js';
import type { ServerContext } from '../context.js';
import { HttpError } from '../http/errors.js';
import { getPage } from './pages-store.js';
import { nextOccurrence } from './schedule.js';
import { deleteAction, findAction, getActionById, insertAction, setPublished, updateAction, type ActionRow } from './store.js';
import { assertValidAction, definitionOf } from './validation.js';

/** The schedule of a definition, when it has a schedule trigger. */
export function scheduleOf(def: ActionDefinition | null): { frequency: string; timezone: string } | null {
  if (!def || !def.frequency || !def.triggers.some((t) => t.trigger === 'schedule')) return null;
  return { frequency: def.frequency, timezone: def.timezone };
}

/** First occurrence after `now` of an active action's published schedule (null when none). */
export function freshNextRun(active: boolean, published: ActionDefinition | null, now: number): string | null {
  const schedule = active ? scheduleOf(published) : null;
  if (!schedule) return null;
  const next = nextOccurrence(schedule.frequency, schedule.timezone, now);
  return next === null ? null : new Date(next).toISOString();
}

export async function requireAction(ctx: ServerContext, appId: number, idOrName: string): Promise<ActionRow> {
  const row = await findAction(ctx.db, appId, idOrName);
  if (!row) throw new HttpError(404, 'ACTION_NOT_FOUND', `No action "${idOrName}" in app ${appId}`);
  return row;
}

async function assertPage(ctx: ServerContext, appId: number, pageId: number | null | undefined): Promise<void> {
  if (pageId === undefined || pageId === null) return;
  if (!(await getPage(ctx.db, appId, pageId)))
    throw new HttpError(422, 'INVALID_ACTION', `pageId: no screen ${pageId} in app ${appId}`, {
      issues: [{ path: 'pageId', message: `no screen ${pageId}`, kind: 'meaning' }],
    });
}

const nameTaken = (name: string) => new HttpError(409, 'NAME_TAKEN', `An action named "${name}" already exists in this app`);

const isUniqueViolation = (error: unknown) => /UNIQUE|unique/.test(String((error as Error)?.message));

export async function createAction(ctx: ServerContext, app: { id: number; organizationId: number }, body: Record<string, unknown>): Promise<ActionRow> {
  assertValidAction(body, false);
  const input = body as unknown as ActionInput;
  await assertPage(ctx, app.id, input.pageId);
  const now = ctx.nowIso();
  try {
    const id = await ctx.db.transaction(async (tx) => {
      if (await findAction(tx, app.id, input.name)) throw nameTaken(input.name);
      return insertAction(tx, {
        appId: app.id,
        organizationId: app.organizationId,
        name: input.name,
        active: input.active ?? true,
        working: definitionOf(input),
        now,
      });
    });
    return (await getActionById(ctx.db, app.id, id))!;
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(input.name);
    throw error;
  }
}

export async function changeAction(ctx: ServerContext, appId: number, idOrName: string, body: Record<string, unknown>): Promise<ActionRow> {
  const row = await requireAction(ctx, appId, idOrName);
  assertValidAction(body, true, { ...row.working, name: row.name, active: row.active });
  const patch = body as ActionUpdate;
  await assertPage(ctx, appId, patch.pageId);
  const name = patch.name ?? row.name;
  const active = patch.active ?? row.active;
  // `active` applies at once; the schedule restarts from now when an action is switched back on.
  const nextRunAt = active === row.active ? row.nextRunAt : freshNextRun(active, row.published, ctx.clock());
  try {
    await ctx.db.transaction(async (tx) => {
      if (name !== row.name && (await findAction(tx, appId, name))) throw nameTaken(name);
      await updateAction(tx, row.id, { name, active, working: definitionOf(patch, row.working), nextRunAt, now: ctx.nowIso() });
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(name);
    throw error;
  }
  return (await getActionById(ctx.db, appId, row.id))!;
}

export async function removeAction(ctx: ServerContext, appId: number, idOrName: string): Promise<void> {
  const row = await requireAction(ctx, appId, idOrName);
  await deleteAction(ctx.db, row.id);
}

/** `publish(true)` copies the working copy to the snapshot; `publish(false)` drops it. */
export async function publishAction(ctx: ServerContext, appId: number, id: string, publish: boolean): Promise<ActionRow> {
  const row = await requireAction(ctx, appId, id);
  if (!publish) {
    await setPublished(ctx.db, row.id, null, null, ctx.nowIso());
  } else {
    const snapshot = structuredClone(row.working);
    const before = JSON.stringify(scheduleOf(row.published));
    const after = JSON.stringify(scheduleOf(snapshot));
    // Same schedule as before: keep the pending occurrence (it follows from the last scheduled instant).
    const nextRunAt = before === after && row.nextRunAt ? row.nextRunAt : freshNextRun(row.active, snapshot, ctx.clock());
    await setPublished(ctx.db, row.id, snapshot, nextRunAt, ctx.nowIso());
  }
  return (await getActionById(ctx.db, appId, row.id))!;
}
