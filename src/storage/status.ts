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
  if (host.ctx.runtime.closed) throw new host.ClientError('CLIENT_CLOSED', 'This client is closed');
  const [queuedRuns, analyticsBatches, logUploads] = await Promise.all([host.count('runQueue'), host.count('analyticsQueue'), host.count('runLogs')]);
  return { online: host.isOnline(), queuedRuns, analyticsBatches, logUploads };
}

/** The watch of one client, kept in its runtime (`status`): statusChanged (src/storage/client-store.ts) calls `check`. */
export type StatusWatch = {
  listeners: Set<StatusListener>;
  check: () => void;
  /** The latest read: its status, JSON and number (reads are numbered as they start). */
  last?: { text: string; status: ClientStatus; seq: number };
  seq: number;
  pending?: boolean;
  /** Other tabs' notices, open while someone listens. */
  channel?: BroadcastChannel;
  /** The status (JSON) each listener heard last. */
  heard: Map<StatusListener, string>;
};

/**
 * Reads the status and tells every listener whose last status differs. A read that ends after a later one has
 * been taken is dropped: nobody hears an older status after a newer one.
 */
async function read(host: RunsHost, w: StatusWatch): Promise<void> {
  if (host.ctx.runtime.closed) return;
  const seq = ++w.seq;
  let now: ClientStatus;
  try {
    now = await status(host);
  } catch (error) {
    host.ctx.logger.warn(`Client status could not be read: ${(error as Error)?.message ?? error}`);
    return;
  }
  if (w.last && w.last.seq > seq) return;
  const text = JSON.stringify(now);
  w.last = { text, status: now, seq };
  for (const fn of [...w.listeners])
    if (w.heard.get(fn) !== text && w.listeners.has(fn)) {
      w.heard.set(fn, text);
      call(host, fn, now);
    }
}

function watchOf(host: RunsHost): StatusWatch {
  const runtime = host.ctx.runtime;
  if (runtime.status) return runtime.status;
  const w: StatusWatch = {
    listeners: new Set(),
    seq: 0,
    heard: new Map(),
    check: () => {
      if (w.pending || w.listeners.size === 0) return;
      w.pending = true;
      setTimeout(() => {
        w.pending = false;
        void read(host, w);
      }, 0);
    },
  };
  runtime.status = w;
  const target = globalThis as { addEventListener?: (type: string, fn: () => void) => void };
  target.addEventListener?.('online', w.check);
  target.addEventListener?.('offline', w.check);
  return w;
}

/**
 * Calls `listener` with the status now, then whenever it changes: the browser goes online or offline, or a
 * queue grows or shrinks, in this tab or another tab of the app (their notices come over a BroadcastChannel).
 * Changes in one turn are reported once; a listener never hears the same status twice in a row, nor an older
 * status after a newer one. Returns the function that stops it.
 */
export function watchStatus(host: RunsHost, listener: StatusListener): () => void {
  if (host.ctx.runtime.closed) return () => {}; // Client.close(): nothing more is watched
  const w = watchOf(host);
  w.listeners.add(listener);
  if (!w.channel && typeof BroadcastChannel === 'function') {
    w.channel = new BroadcastChannel(host.statusChannel);
    w.channel.onmessage = w.check;
    // Node: a listener nobody stops must not keep the process alive (browsers have no unref).
    (w.channel as { unref?: () => void }).unref?.();
  }
  // The status now: this read tells the new listener (and anyone a change has not reached yet).
  void read(host, w);
  return () => {
    if (!w.listeners.delete(listener)) return;
    w.heard.delete(listener);
    if (w.listeners.size > 0) return;
    // Nobody watches: changes meanwhile are not followed; the next listener starts from a fresh read.
    w.last = undefined;
    w.channel?.close();
    w.channel = undefined;
  };
}

function call(host: RunsHost, listener: StatusListener, now: ClientStatus): void {
  try {
    listener({ ...now });
  } catch (error) {
    host.ctx.logger.error('A Client.onStatusChange listener threw', error);
  }
}
