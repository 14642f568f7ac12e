/**
 * The npm client in Node runs device pipelines in a worker thread, as the browser does in a Web Worker
 * (device.ts): `startNodeWorker()` starts `engine-thread.mjs` (dist/engine-thread.mjs next to the built client;
 * from src/, a bootstrap that loads the TypeScript) and wraps it in the Web Worker shape device.ts drives.
 * The thread keeps the process alive only while runs are in flight, so a script ends when its work does. A thread
 * that dies after it has started (a crash, a kill) fails the runs it had (WORKER_CRASHED) and is replaced.
 */
import { threadExecArgv } from './thread-argv.js';
import type { PageToWorker, WorkerToPage } from './worker-protocol.js';

/** The part of a Web Worker the device engine uses. */
export interface WorkerLike {
  postMessage(message: PageToWorker): void;
  addEventListener(type: 'message', listener: (event: { data: WorkerToPage }) => void): void;
  addEventListener(type: 'error', listener: (event: { message: string }) => void): void;
  terminate(): void;
}

interface NodeWorker {
  postMessage(message: unknown): void;
  on(event: 'message', fn: (data: WorkerToPage) => void): void;
  on(event: 'error', fn: (error: Error) => void): void;
  on(event: 'exit', fn: (code: number) => void): void;
  terminate(): Promise<number>;
  ref(): void;
  unref(): void;
}

type WorkerThreads = { Worker: new (url: URL, options?: Record<string, unknown>) => NodeWorker };

type NodeProcess = { versions?: { node?: string }; execArgv?: string[]; getBuiltinModule?: (id: string) => unknown };
const nodeProcess = () => (globalThis as { process?: NodeProcess }).process;

const builtin = <T>(id: string): T | undefined => {
  const proc = nodeProcess();
  if (!proc?.versions?.node) return undefined;
  return proc.getBuiltinModule?.(id) as T | undefined;
};

/** A Node worker thread running the engine, or undefined where there is none (not Node, Node < 20.16, or it cannot start). */
export function startNodeWorker(): WorkerLike | undefined {
  try {
    return start();
  } catch {
    return undefined;
  }
}

function start(): WorkerLike | undefined {
  const threads = builtin<WorkerThreads>('node:worker_threads');
  // Node's URL: a DOM shim (happy-dom) replaces the global one; and not the `new URL('…', import.meta.url)`
  // pattern, which vitest's web environments rewrite into an http: URL of their dev server.
  const NodeURL = builtin<{ URL: typeof URL }>('node:url')?.URL;
  if (!threads || !NodeURL) return undefined;
  const entry = new NodeURL('./engine-thread.mjs', import.meta.url);
  const messageListeners: ((event: { data: WorkerToPage }) => void)[] = [];
  const errorListeners: ((event: { message: string }) => void)[] = [];
  /** Runs posted to the current thread and not done yet. */
  const inFlight = new Set<number>();
  let warm: PageToWorker | undefined;
  let ended = false;
  let worker: NodeWorker;

  const emit = (data: WorkerToPage) => {
    for (const fn of messageListeners) fn({ data });
  };
  const spawn = () => {
    const thread = new threads.Worker(entry, { name: 'in-app-runtime pipeline engine', execArgv: threadExecArgv(nodeProcess()?.execArgv ?? []) });
    let warmed = false;
    let failure: string | undefined;
    thread.unref();
    thread.on('message', (message) => {
      if (thread !== worker) return;
      if (message.type === 'warmed') warmed = true;
      if (message.type === 'done' && inFlight.delete(message.id) && inFlight.size === 0) thread.unref();
      emit(message);
    });
    thread.on('error', (error) => (failure ??= error?.message ?? String(error)));
    thread.on('exit', (code) => {
      if (ended || thread !== worker) return;
      const reason = failure ?? `the engine thread exited (code ${code})`;
      if (!warmed) {
        // It never started: device.ts runs pipelines inline from now on.
        ended = true;
        for (const fn of errorListeners) fn({ message: reason });
        return;
      }
      // It worked, then died (a crash, a kill): its runs fail, not run again (one may be what killed it), and a
      // new thread takes the next runs.
      const lost = [...inFlight];
      inFlight.clear();
      try {
        worker = spawn();
        if (warm) worker.postMessage(warm);
      } catch (error) {
        ended = true;
        for (const fn of errorListeners) fn({ message: `${reason}; no new engine thread: ${(error as Error)?.message ?? String(error)}` });
      }
      for (const id of lost)
        emit({
          type: 'done',
          id,
          outcome: {
            ok: false,
            error: { errorType: 'WorkerError', code: 'WORKER_CRASHED', errorMessage: `The engine thread stopped during the run: ${reason}`, trace: [] },
            trace: [],
            durationMs: 0,
          },
        });
    });
    return thread;
  };
  worker = spawn();
  return {
    postMessage(message) {
      // The answer to a host call of a run its dead thread took along: the new thread numbers its calls afresh, so
      // it would take the answer for a call of its own.
      if (message.type === 'reply' && !inFlight.has(message.id)) return;
      if (message.type === 'warm') warm = message;
      if (message.type === 'run' && inFlight.add(message.id).size === 1) worker.ref();
      worker.postMessage(message);
    },
    addEventListener(type: 'message' | 'error', listener: (event: never) => void) {
      if (type === 'error') errorListeners.push(listener as (event: { message: string }) => void);
      else messageListeners.push(listener as (event: { data: WorkerToPage }) => void);
    },
    terminate() {
      ended = true;
      void worker.terminate();
    },
  };
}
