/**
 * The npm client in Node runs device pipelines in a worker thread, as the browser does in a Web Worker
 * (device.ts): `startNodeWorker()` starts `engine-thread.mjs` (dist/engine-thread.mjs next to the built client;
 * from src/, a bootstrap that loads the TypeScript) and wraps it in the Web Worker shape device.ts drives.
 * The thread keeps the process alive only while runs are in flight, so a script ends when its work does.
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
  const here = import.meta.url;
  const worker = new threads.Worker(new NodeURL('./engine-thread.mjs', here), {
    name: 'in-app-runtime pipeline engine',
    execArgv: threadExecArgv(nodeProcess()?.execArgv ?? []),
  });
  worker.unref();
  let inFlight = 0;
  let ended = false;
  const errorListeners: ((event: { message: string }) => void)[] = [];
  const fail = (message: string) => {
    if (ended) return;
    ended = true;
    for (const fn of errorListeners) fn({ message });
  };
  worker.on('error', (error) => fail(error?.message ?? String(error)));
  worker.on('exit', (code) => fail(`the engine thread exited (code ${code})`));
  worker.on('message', (message) => {
    if (message.type === 'done' && --inFlight === 0) worker.unref();
  });
  return {
    postMessage(message) {
      if (message.type === 'run' && inFlight++ === 0) worker.ref();
      worker.postMessage(message);
    },
    addEventListener(type: 'message' | 'error', listener: (event: never) => void) {
      if (type === 'error') errorListeners.push(listener as (event: { message: string }) => void);
      else worker.on('message', (data) => (listener as (event: { data: WorkerToPage }) => void)({ data }));
    },
    terminate() {
      ended = true;
      void worker.terminate();
    },
  };
}
