/** The engine's side of the Web Worker: runs pipelines posted by the page, calling the page's host services over messages. */
import { memoryImagesOn } from '../sandbox/pool.js';
import { restoredFromImages, runIdleWork } from '../sandbox/session.js';
import { configureWasm } from '../sandbox/wasm.js';
import { noteLayout, setLayout } from '../sandbox/wasm-layout.js';
import { runPipeline } from './index.js';
import { deserializeError, type PageToWorker, type WorkerToPage } from './worker-protocol.js';
import type { DataSourceConnectionLike, HostServices, RunOutcome } from '../contract/pipeline.js';

interface Port {
  postMessage(message: WorkerToPage): void;
  addEventListener(type: 'message', listener: (event: { data: PageToWorker }) => void): void;
}

const METHODS = ['find', 'findOne', 'findById', 'insert', 'update', 'removeById', 'query', 'commit'] as const;

/** The warm-up run: one node, no host services. */
const WARM_UP = {
  functions: [{ functionPackage: 'com.client.function.return', settings: { value: 1 } }],
  payload: {},
  environment: 'client' as const,
  services: { dataSources: { connect: () => ({}) as DataSourceConnectionLike }, notifications: { create: async () => ({}) } },
};

export function serveWorker(port: Port): void {
  let warming: Promise<void> = Promise.resolve();
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const aborts = new Map<number, AbortController>();
  let callSeq = 0;

  const call = (
    id: number,
    service: 'dataSources' | 'notifications' | 'http',
    method: string,
    args: unknown[],
    target?: number | string,
    signal?: AbortSignal,
  ) =>
    new Promise<unknown>((resolve, reject) => {
      const callId = ++callSeq;
      pending.set(callId, { resolve, reject });
      port.postMessage({ type: 'call', id, callId, service, method, args, ...(target === undefined ? {} : { target }) });
      signal?.addEventListener('abort', () => pending.has(callId) && port.postMessage({ type: 'cancel', id, callId }), { once: true });
    });

  const servicesFor = (id: number, hasHttp: boolean): HostServices => ({
    dataSources: {
      connect: (target) =>
        Object.fromEntries(METHODS.map((m) => [m, (...args: unknown[]) => call(id, 'dataSources', m, args, target)])) as unknown as DataSourceConnectionLike,
    },
    notifications: { create: (input) => call(id, 'notifications', 'create', [input]) },
    ...(hasHttp ? { http: ({ signal, ...request }) => call(id, 'http', 'request', [request], undefined, signal) as never } : {}),
  });

  port.addEventListener('message', (event) => {
    const message = event.data;
    if (message.type === 'reply') {
      const p = pending.get(message.callId);
      if (!p) return;
      pending.delete(message.callId);
      if (message.ok) p.resolve(message.value);
      else p.reject(deserializeError(message.error));
    } else if (message.type === 'abort') {
      aborts.get(message.id)?.abort();
    } else if (message.type === 'warm') {
      // The page compiled the wasm while this Worker started (device.ts); else it is fetched here. A first tiny run
      // instantiates QuickJS and compiles what every run executes, and leaves the module in the pool for the
      // page's first real run.
      if (message.wasmModule) {
        if (message.wasmBytes instanceof ArrayBuffer) noteLayout(message.wasmModule, new Uint8Array(message.wasmBytes));
        else if (message.wasmLayout) setLayout(message.wasmModule, message.wasmLayout);
        configureWasm(message.wasmModule);
      } else if (message.wasmUrl) configureWasm(message.wasmUrl);
      const warmed = () => {
        // Said here, in the engine's console: runs are slower when they cannot be put back from memory images.
        const memoryImages = memoryImagesOn();
        if (!memoryImages) console.info('[in-app-runtime] Pipeline runs build a new sandbox each (memory images off)');
        port.postMessage({ type: 'warmed', memoryImages });
      };
      warming = runPipeline(WARM_UP).then(warmed, warmed);
    } else if (message.type === 'run') {
      const controller = new AbortController();
      aborts.set(message.id, controller);
      // runPipeline resolves every failure as an outcome; anything else still ends the run, so the page never waits forever.
      const settled = (outcome: RunOutcome) => {
        aborts.delete(message.id);
        port.postMessage({ type: 'done', id: message.id, outcome, restores: restoredFromImages() });
        // The run's sandbox is closed and the next one prepared while the page takes the outcome (session.ts).
        runIdleWork();
      };
      void warming
        .then(() => runPipeline({ ...message.options, services: servicesFor(message.id, message.hasHttp), signal: controller.signal }))
        .then(settled, (error: unknown) =>
          settled({
            ok: false,
            error: {
              errorType: 'InternalError',
              code: 'RUN_FAILED',
              errorMessage: `The engine failed: ${(error as Error)?.message ?? String(error)}`,
              trace: [],
            },
            trace: [],
            durationMs: 0,
          }),
        );
    }
  });
}
