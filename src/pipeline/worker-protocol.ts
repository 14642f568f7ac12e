/**
 * The one message protocol between a pipeline engine in a worker (a browser Web Worker, a server run thread:
 * src/server/actions/threads/) and its host: the host posts runs, the worker calls the host's services by
 * message (the host answers) and posts each run's outcome. Only plain data crosses (and the compiled wasm).
 */
import type { HostServices, HttpRequestLike, RunOutcome, RunPipelineOptions } from '../contract/pipeline.js';
import type { WasmLayout } from '../sandbox/wasm-layout.js';

/** The run options that cross to the worker (services and signal stay on the page). */
export type WorkerRunOptions = Omit<RunPipelineOptions, 'services' | 'signal'>;

export type PageToWorker =
  /**
   * First message: where QuickJS comes from (the module the page compiled, else its URL); the Worker warms up with
   * it. Memory images need the module's layout: read from `wasmBytes` (the page), or read by the sender (`wasmLayout`).
   */
  | { type: 'warm'; wasmUrl?: string; wasmModule?: WebAssembly.Module; wasmBytes?: ArrayBuffer; wasmLayout?: WasmLayout }
  | { type: 'run'; id: number; options: WorkerRunOptions; hasHttp: boolean }
  | { type: 'abort'; id: number }
  | { type: 'reply'; id: number; callId: number; ok: boolean; value?: unknown; error?: SerializedError };

export type WorkerToPage =
  /** The warm-up run after `warm` has finished: the worker takes runs without a start-up delay. `memoryImages`: runs are put back from memory images. */
  | { type: 'warmed'; memoryImages: boolean }
  | { type: 'call'; id: number; callId: number; service: 'dataSources' | 'notifications' | 'http'; target?: number | string; method: string; args: unknown[] }
  /** The caller gave up on an `http` call (its node's time is up): the host cancels the request. */
  | { type: 'cancel'; id: number; callId: number }
  /** `restores`: sandboxes of the worker put back from memory images so far (diagnostics). */
  | { type: 'done'; id: number; outcome: RunOutcome; restores?: number };

export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  status?: number;
}

export function serializeError(error: unknown): SerializedError {
  const e = error as { name?: unknown; message?: unknown; code?: unknown; status?: unknown };
  return {
    name: typeof e?.name === 'string' ? e.name : 'Error',
    message: typeof e?.message === 'string' ? e.message : String(error),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(typeof e?.status === 'number' ? { status: e.status } : {}),
  };
}

export function deserializeError(s: SerializedError | undefined): Error {
  const error = new Error(s?.message ?? 'Host call failed') as Error & { code?: string; status?: number };
  error.name = s?.name ?? 'Error';
  if (s?.code) error.code = s.code;
  if (s?.status) error.status = s.status;
  return error;
}

/** A plain JSON copy: what crosses postMessage is data only. */
export const plain = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/** Answers one worker call with the page's host services; `signal` cancels an `http` call. */
export async function answerCall(services: HostServices, call: Extract<WorkerToPage, { type: 'call' }>, signal?: AbortSignal): Promise<unknown> {
  if (call.service === 'notifications' && call.method === 'create') return services.notifications.create(call.args[0] as Record<string, unknown>);
  if (call.service === 'http' && services.http) return services.http({ ...(call.args[0] as HttpRequestLike), signal });
  if (call.service === 'dataSources' && call.target !== undefined) {
    const conn = services.dataSources.connect(call.target) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const fn = conn[call.method];
    if (typeof fn === 'function') return fn.apply(conn, call.args);
  }
  throw new TypeError(`Unknown host call ${call.service}.${call.method}`);
}
