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

type Watch = {
  listeners: Set<StatusListener>;
  check: () => void;
  /** What was reported last (JSON) and its read's number: a read that started earlier is never reported after it. */
  last?: { text: string; status: ClientStatus; seq: number };
  /** Numbers the status reads in the order they start. */
  seq: number;
  pending?: boolean;
  /** Other tabs' notices, open while someone listens. */
  channel?: BroadcastChannel;
  /** The number of the read each listener heard last. */
  heard: Map<StatusListener, number>;
};
const watches = new WeakMap<RunsHost['runs'], Watch>();

/** Reads the status; undefined when a read that started later has already been reported, or on failure. */
async function read(host: RunsHost, w: Watch): Promise<ClientStatus | undefined> {
  const seq = ++w.seq;
  let now: ClientStatus;
  try {
    now = await status(host);
  } catch (error) {
    host.ctx.logger.warn(`Client status could not be read: ${(error as Error)?.message ?? error}`);
    return undefined;
  }
  if (w.last && w.last.seq > seq) return undefined;
  const text = JSON.stringify(now);
  const changed = text !== w.last?.text;
  w.last = { text, status: now, seq };
  return changed ? now : undefined;
}

function watchOf(host: RunsHost): Watch {
  let watch = watches.get(host.runs);
  if (watch) return watch;
  const w: Watch = {
    listeners: new Set(),
    seq: 0,
    heard: new Map(),
    check: () => {
      if (w.pending || w.listeners.size === 0) return;
      w.pending = true;
      setTimeout(async () => {
        w.pending = false;
        const now = await read(host, w);
        if (now && w.last) for (const fn of [...w.listeners]) tell(host, w, fn, w.last);
      }, 0);
    },
  };
  watches.set(host.runs, (watch = w));
  host.onChange(w.check);
  const target = globalThis as { addEventListener?: (type: string, fn: () => void) => void };
  target.addEventListener?.('online', w.check);
  target.addEventListener?.('offline', w.check);
  return w;
}

/**
 * Calls `listener` with the status now, then whenever it changes: the browser goes online or offline, or a
 * queue grows or shrinks, in this tab or another tab of the app (their notices come over a BroadcastChannel).
 * Changes in one turn are reported once; a status equal to the last one reported is not, and a read that
 * started before the last one reported is dropped. Returns the function that stops it.
 */
export function watchStatus(host: RunsHost, listener: StatusListener): () => void {
  const w = watchOf(host);
  w.listeners.add(listener);
  if (!w.channel && typeof BroadcastChannel === 'function') {
    w.channel = new BroadcastChannel(host.statusChannel);
    w.channel.onmessage = w.check;
  }
  // The status now, to this listener only: the latest reported if a later read overtook this one.
  const seq = w.seq + 1;
  void read(host, w).then(() => {
    if (w.listeners.has(listener) && w.last && w.last.seq >= seq) tell(host, w, listener, w.last);
  });
  return () => {
    if (!w.listeners.delete(listener)) return;
    w.heard.delete(listener);
    if (w.listeners.size > 0) return;
    // Nobody watches: the next listener's first status is the new baseline (changes meanwhile were not followed).
    w.last = undefined;
    w.channel?.close();
    w.channel = undefined;
  };
}

/** Reports a read to a listener that has not heard it (or a later one) yet. */
function tell(host: RunsHost, w: Watch, listener: StatusListener, read: NonNullable<Watch['last']>): void {
  if ((w.heard.get(listener) ?? 0) >= read.seq) return;
  w.heard.set(listener, read.seq);
  call(host, listener, read.status);
}

function call(host: RunsHost, listener: StatusListener, now: ClientStatus): void {
  try {
    listener({ ...now });
  } catch (error) {
    host.ctx.logger.error('A Client.onStatusChange listener threw', error);
  }
}
