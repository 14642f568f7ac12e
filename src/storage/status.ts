/**
 * Client.status() and Client.onStatusChange() (docs/analytics.md "Offline status"), in the lazy `runs` chunk:
 * whether the device is online and how much work waits on it for the backend (server runs queued offline,
 * analytics batches, device run logs), like the pending-writes signal of an offline-first database.
 */
import type { RunsHost } from '../actions/runs-host.js';

export interface ClientStatus {
  /** What the browser says (`navigator.onLine`; true where it is unknown, e.g. Node). */
  online: boolean;
  /** Server runs queued on this device while offline, not sent yet. */
  queuedRuns: number;
  /** Analytics batches stored on this device, not delivered yet. */
  analyticsBatches: number;
  /** Logs of runs made on this device, not uploaded yet. */
  logUploads: number;
}

export type StatusListener = (status: ClientStatus) => void;

export async function status(host: RunsHost): Promise<ClientStatus> {
  const [queuedRuns, analyticsBatches, logUploads] = await Promise.all([host.count('runQueue'), host.count('analyticsQueue'), host.count('runLogs')]);
  return { online: host.isOnline(), queuedRuns, analyticsBatches, logUploads };
}

type Watch = { listeners: Set<StatusListener>; last?: string; pending?: boolean };
const watches = new WeakMap<RunsHost['runs'], Watch>();

/**
 * Calls `listener` with the status now, then whenever it changes: the browser goes online or offline, or a
 * queue grows or shrinks. Changes in one turn are reported once; a status equal to the last one reported is
 * not. Returns the function that stops it.
 */
export function watchStatus(host: RunsHost, listener: StatusListener): () => void {
  let watch = watches.get(host.runs);
  if (!watch) {
    const w: Watch = { listeners: new Set() };
    watches.set(host.runs, (watch = w));
    const check = () => {
      if (w.pending || w.listeners.size === 0) return;
      w.pending = true;
      setTimeout(async () => {
        w.pending = false;
        let now: ClientStatus;
        try {
          now = await status(host);
        } catch (error) {
          return host.ctx.logger.warn(`Client status could not be read: ${(error as Error)?.message ?? error}`);
        }
        const text = JSON.stringify(now);
        if (text === w.last || w.listeners.size === 0) return;
        w.last = text;
        for (const fn of [...w.listeners]) call(host, fn, now);
      }, 0);
    };
    host.onChange(check);
    const target = globalThis as { addEventListener?: (type: string, fn: () => void) => void };
    target.addEventListener?.('online', check);
    target.addEventListener?.('offline', check);
  }
  const w = watch;
  w.listeners.add(listener);
  // The status now, to this listener only.
  void status(host).then(
    (now) => {
      if (!w.listeners.has(listener)) return;
      w.last = JSON.stringify(now);
      call(host, listener, now);
    },
    (error) => host.ctx.logger.warn(`Client status could not be read: ${(error as Error)?.message ?? error}`),
  );
  return () => {
    w.listeners.delete(listener);
    // Nobody watches: the next listener's first status is the new baseline (changes meanwhile were not followed).
    if (w.listeners.size === 0) w.last = undefined;
  };
}

function call(host: RunsHost, listener: StatusListener, now: ClientStatus): void {
  try {
    listener({ ...now });
  } catch (error) {
    host.ctx.logger.error('A Client.onStatusChange listener threw', error);
  }
}
