import type { ServerContext } from '../context.js';
import { checkOutboundUrl } from '../http/outbound-guard.js';
import { setOwn } from './query/values.js';
import { insertLog } from './store/logs.js';
import type { DataSourceRecord, EntryRecord, FieldOperation, Hook, HookEvent } from './types.js';

/**
 * Data source hooks.
 * - `operations` hooks transform fields before an entry is saved (`trim`, `lower`, `upper`, `{{column}}` templates).
 * - `web` hooks POST the saved entry to a URL after the write committed; a failure is logged, never undoes the write.
 * `beforeSave` runs on both inserts and updates; `insert` / `update` only on their kind.
 */

export type Matcher = (where: Record<string, unknown>) => (entry: EntryRecord) => boolean;

function applies(hook: Hook, event: 'insert' | 'update', data: Record<string, unknown>, matcher: Matcher, dataSourceId: number): boolean {
  if (!hook.runOn.includes(event) && !hook.runOn.includes('beforeSave')) return false;
  if (!hook.conditions || hook.conditions.length === 0) return true;
  const probe: EntryRecord = { id: 0, dataSourceId, data, order: 0, createdAt: '', updatedAt: '' };
  return hook.conditions.every((condition) => matcher(condition)(probe));
}

function readPath(data: Record<string, unknown>, path: string): unknown {
  let value: unknown = data;
  for (const part of path.split('.')) {
    // Own properties only: `constructor`, `__proto__`, `toString` are ordinary (absent) columns.
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function render(template: string, data: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([^{}]+?)\s*\}\}/g, (_m, path: string) => {
    const value = readPath(data, path);
    if (value === undefined || value === null) return '';
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}

function transform(op: FieldOperation, value: unknown, data: Record<string, unknown>): unknown {
  if (typeof op === 'object') return render(op.template, data);
  if (op.includes('{{')) return render(op, data);
  if (typeof value !== 'string') return value;
  if (op === 'trim') return value.trim();
  if (op === 'lower') return value.toLowerCase();
  if (op === 'upper') return value.toUpperCase();
  return value;
}

/** Runs the `operations` hooks of `event` on the data about to be saved (a new object is returned). */
export function runOperationHooks(ds: DataSourceRecord, event: 'insert' | 'update', data: Record<string, unknown>, matcher: Matcher): Record<string, unknown> {
  let out = data;
  for (const hook of ds.hooks) {
    if (hook.type !== 'operations' || !applies(hook, event, out, matcher, ds.id)) continue;
    // Templates read the values as they were before this hook ran.
    const before = out;
    out = { ...out };
    for (const [column, op] of Object.entries(hook.payload)) {
      const isTemplate = typeof op === 'object' || op.includes('{{');
      if (!isTemplate && !Object.hasOwn(before, column)) continue;
      setOwn(out, column, transform(op, Object.hasOwn(before, column) ? before[column] : undefined, before));
    }
  }
  return out;
}

/** Web hooks to call after the write, for each saved entry. */
export function pendingWebHooks(
  ds: DataSourceRecord,
  event: 'insert' | 'update',
  entry: EntryRecord,
  matcher: Matcher,
): { hook: Extract<Hook, { type: 'web' }>; event: HookEvent; entry: EntryRecord }[] {
  const out = [];
  for (const hook of ds.hooks) if (hook.type === 'web' && applies(hook, event, entry.data, matcher, ds.id)) out.push({ hook, event, entry });
  return out;
}

/** Tracks in-flight web hook calls so the server can abort them when it closes (`stop`, registered by services.ts). */
export function createWebHookRunner(ctx: ServerContext) {
  const inFlight = new Set<AbortController>();
  return {
    /** Aborts the calls in flight (each is logged as failed). */
    stop(): void {
      for (const controller of inFlight) controller.abort();
    },
    /** Fires the calls without waiting; failures become `dataSource.hook.failed` log records. */
    fire(ds: DataSourceRecord, calls: ReturnType<typeof pendingWebHooks>): void {
      for (const { hook, event, entry } of calls) {
        const controller = new AbortController();
        inFlight.add(controller);
        const timeoutMs = hook.payload.timeoutMs ?? 5000;
        const timer = setTimeout(() => controller.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
        const body = JSON.stringify({ event, dataSource: { id: ds.id, name: ds.name }, entry });
        void (async () => {
          try {
            const policy = ctx.limits.outboundPrivateNetworks;
            await checkOutboundUrl(new URL(hook.payload.url), policy);
            const response = await fetch(hook.payload.url, {
              method: 'POST',
              headers: { 'Content-Type': 'application/json', ...(hook.payload.headers ?? {}) },
              body,
              signal: controller.signal,
              // A redirect could lead to a private address the check above never saw.
              redirect: policy === 'deny' ? 'error' : 'follow',
            });
            await response.arrayBuffer().catch(() => undefined);
            if (!response.ok) throw new Error(`the URL answered ${response.status}`);
          } catch (error) {
            const reason = controller.signal.aborted ? (controller.signal.reason as Error | undefined) : (error as Error);
            await insertLog(ctx.db, {
              type: 'dataSource.hook.failed',
              appId: ds.appId,
              organizationId: ds.organizationId,
              dataSourceId: ds.id,
              dataSourceEntryId: entry.id,
              data: { url: hook.payload.url, event, error: reason?.message ?? String(reason) },
              createdAt: ctx.nowIso(),
            }).catch(() => undefined);
          } finally {
            clearTimeout(timer);
            inFlight.delete(controller);
          }
        })();
      }
    },
  };
}
