/**
 * The contract between the pipeline engine (src/pipeline, src/sandbox,
 * src/functions) and its hosts: the device (src/actions, src/analytics) and
 * the backend (src/server/actions). Both hosts call `runPipeline` (exported by
 * src/pipeline/index.ts) with the services of their side.
 */

/** `type` omitted or `function`: a function node. */
export interface FunctionNode {
  type?: 'function';
  functionPackage: string;
  settings?: Record<string, unknown>;
  functions?: PipelineNode[];
  /** Per-node policies (beyond the spec). */
  timeout?: number;
  retry?: { attempts: number; backoff?: 'constant' | 'exponential'; delayMs?: number };
  continueOnError?: boolean;
}

export interface LoopNode {
  type: 'loop';
  /** Name of a context property holding an array. */
  items?: string;
  /** Integers from..to, both inclusive (each may also be an expression string). */
  range?: { from: number | string; to: number | string };
  functions?: PipelineNode[];
  timeout?: number;
  continueOnError?: boolean;
}

export interface IfNode {
  type: 'if';
  conditions: { condition: string; functions?: PipelineNode[] }[];
  elseFunctions?: PipelineNode[];
  timeout?: number;
  continueOnError?: boolean;
}

export type PipelineNode = FunctionNode | LoopNode | IfNode;

/** A query as the data source find/query operations take it (see src/data-sources). */
export type DataQuery = Record<string, unknown>;

/** The host's data source operations, as seen by built-ins and by the guest's bridged `Client`. */
export interface DataSourceConnectionLike {
  find(query?: DataQuery): Promise<unknown[]>;
  findOne(query?: DataQuery): Promise<unknown | null>;
  findById(id: number): Promise<unknown>;
  insert(data: Record<string, unknown>): Promise<unknown>;
  update(id: number, data: Record<string, unknown>): Promise<unknown>;
  removeById(id: number): Promise<unknown>;
  query(body: DataQuery): Promise<unknown>;
  commit(body: Record<string, unknown>): Promise<unknown>;
}

export interface HttpRequestLike {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Aborted when the node's or the run's time is up (added by the engine). */
  signal?: AbortSignal;
  /** Largest response body the engine accepts, bytes (added by the engine; the host may enforce it while reading). */
  maxResponseBytes?: number;
}

export interface HttpResponseLike {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Trusted host services the built-ins and bridges call. Each side supplies its own. */
export interface HostServices {
  dataSources: { connect(idOrName: number | string): DataSourceConnectionLike };
  notifications: { create(input: Record<string, unknown>): Promise<unknown> };
  /** Outbound HTTP: only on the server (undefined on the device). */
  http?: (request: HttpRequestLike) => Promise<HttpResponseLike>;
}

/** A custom function package whose JavaScript runs only inside the sandbox. */
export interface FunctionPackageSource {
  package: string;
  name?: string;
  description?: string;
  /** Source of `(settings, context) => result` (may be async). */
  code: string;
}

export interface PipelineLimits {
  runTimeoutMs: number;
  payloadChars: number;
  resultBytes: number;
  maxLoopIterations: number;
  maxDepth: number;
  /** Hard cap of the sandbox's memory, bytes (default 128 MB). */
  memoryBytes?: number;
  /** Trace entries kept per run; later ok/skipped entries are counted, failures always kept (default 1000). */
  maxTraceEntries?: number;
  /** Characters of JSON kept of each traced `input`/`output`; a longer value becomes a {@link TruncatedValue} (default 4,096). */
  traceValueBytes?: number;
}

export interface TraceEntry {
  /** Node path, e.g. `functions[2].functions[0]`. */
  path: string;
  /** Function package, `loop` or `if`. */
  package: string;
  durationMs: number;
  outcome: 'ok' | 'skipped' | 'failed' | 'retried' | 'log';
  message?: string;
  /** Index of the loop iteration (innermost loop) the node ran in. */
  iteration?: number;
  /** When the node started, in ms since the run began. */
  startMs?: number;
  /** Attempts after the first (a `retry` policy). */
  retries?: number;
  /** The node's evaluated settings: JSON, or a {@link TruncatedValue} past `limits.traceValueBytes`. */
  input?: unknown;
  /** What the node returned: JSON, or a {@link TruncatedValue} past `limits.traceValueBytes`. */
  output?: unknown;
}

/** A trace value whose JSON is longer than `limits.traceValueBytes` (4,096): its length and its first characters. */
export interface TruncatedValue {
  $truncated: true;
  /** Characters of the whole value's JSON. */
  length: number;
  /** The first `traceValueBytes` characters of that JSON. */
  preview: string;
}

export interface RunError {
  /** e.g. `TimeoutError`, `ValidationError`, `FunctionError`, `OutOfMemoryError`. */
  errorType: string;
  errorMessage: string;
  /** Machine code: TIMEOUT, OUT_OF_MEMORY, PAYLOAD_TOO_LARGE, RESULT_TOO_LARGE, LOOP_LIMIT, DEPTH_LIMIT, FUNCTION_FAILED, UNKNOWN_FUNCTION, … */
  code: string;
  trace: TraceEntry[];
}

export type RunOutcome =
  | { ok: true; result: unknown; trace: TraceEntry[]; durationMs: number }
  | { ok: false; error: RunError; trace: TraceEntry[]; durationMs: number };

export interface RunPipelineOptions {
  functions: PipelineNode[];
  payload?: Record<string, unknown>;
  /** Extra top-level context names: `trigger`, `log`, `event`. */
  context?: Record<string, unknown>;
  /** Where this run happens; decides which built-ins are available (http-request is server only). */
  environment: 'server' | 'client';
  services: HostServices;
  customFunctions?: FunctionPackageSource[];
  limits?: Partial<PipelineLimits>;
  signal?: AbortSignal;
  /**
   * Debug in page (docs/pipeline.md, "Debug in page"): script nodes and custom functions run as these
   * functions of the host (the debug page's own scripts, not sandboxed) instead of inside QuickJS.
   */
  inPage?: InPageCode;
}

/** The bridged `Client` a script node gets in page mode: the same two services as inside the sandbox. */
export interface InPageClient {
  DataSources: { connect(idOrName: number | string): DataSourceConnectionLike };
  Notifications: { create(input: Record<string, unknown>): Promise<unknown> };
}

/** A script node's body or a custom function, as a function of the page: `(settings, context, Client, currentItem, currentIndex)`. */
export type InPageFunction = (
  settings: Record<string, unknown>,
  context: Record<string, unknown>,
  Client: InPageClient,
  currentItem: unknown,
  currentIndex: number | undefined,
) => unknown;

/** Where page mode finds the page functions; undefined: not loaded on this page (the node fails). */
export interface InPageCode {
  /** The function of the script node at `path` (e.g. `functions[2].functions[0]`) whose code is `code`. */
  script(path: string, code: string): InPageFunction | undefined;
  /** The function of custom function `pkg` whose code is `code`. */
  custom(pkg: string, code: string): InPageFunction | undefined;
}
