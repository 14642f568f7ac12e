/**
 * Client.App.Actions.Pipeline: runs the pipeline of the debug compile page (spec "Debug path"). Only that page
 * runs it, so this is a lazy chunk of client.js (`pipeline-<hash>.mjs`, loaded by src/actions/pipeline-api.ts):
 * what it needs of client.js comes in `host` (the client's engine loader, function registry and error class),
 * so it bundles nothing of the client's state.
 */
import type { ClientContext } from '../core/context.js';
import type { ClientError } from '../http/errors.js';
import type { FunctionPackageSource, HostServices, InPageCode, PipelineLimits, PipelineNode, RunOutcome } from '../contract/pipeline.js';
import type { Engine } from './engine.js';

/** What the chunk uses of client.js. */
export interface PipelineHost {
  ctx: ClientContext;
  loadEngine(options: { assetsUrl?: string; logger?: { once(key: string, message: string): void }; inline?: boolean }): Promise<Engine>;
  /** Host services of device runs (this client's data sources and notifications). */
  services(): HostServices;
  /** Custom functions registered on this device. */
  registered(): FunctionPackageSource[];
  ClientError: typeof ClientError;
}

export interface PipelineRunOptions {
  /** The pipeline; default `window.ENV.taskPipeline` (an array of nodes, or an object with `functions`). */
  pipeline?: PipelineNode[] | { functions: PipelineNode[] };
  /** The payload; default the JSON of the page's `payload` query parameter. */
  payload?: Record<string, unknown>;
  /** Extra custom functions (the page's `ENV.taskFunctions` are used by default, then those registered on this device). */
  customFunctions?: FunctionPackageSource[];
  /** Host services (default: this client's data sources and notifications). */
  services?: HostServices;
  /** Extra context names (default `{ trigger: 'manual' }`). */
  context?: Record<string, unknown>;
  /** Limits of this run (default: the client's configured limits). */
  limits?: Partial<PipelineLimits>;
  /** Log the trace to the console (default true). */
  log?: boolean;
  signal?: AbortSignal;
  /**
   * Debug in page (docs/pipeline.md): script nodes and custom functions run as these functions of the page,
   * **not sandboxed**, so DevTools breakpoints and `debugger` statements stop in them. The engine then runs on
   * the page's thread (no Web Worker). The debug compile page passes its own in "debug in page" mode.
   */
  inPage?: InPageCode;
}

type PageEnv = { taskPipeline?: unknown; taskFunctions?: unknown };

function pageEnv(): PageEnv {
  return ((globalThis as { ENV?: PageEnv }).ENV ?? {}) as PageEnv;
}

function resolvePipeline(host: PipelineHost, given: PipelineRunOptions['pipeline']): PipelineNode[] {
  let source: unknown = given ?? pageEnv().taskPipeline;
  if (typeof source === 'string') {
    try {
      source = JSON.parse(source);
    } catch {
      throw new host.ClientError('INVALID_ARGUMENT', 'Pipeline.run: ENV.taskPipeline is not valid JSON');
    }
  }
  if (Array.isArray(source)) return source as PipelineNode[];
  if (source && typeof source === 'object' && Array.isArray((source as { functions?: unknown }).functions))
    return (source as { functions: PipelineNode[] }).functions;
  throw new host.ClientError('INVALID_ARGUMENT', 'Pipeline.run: no pipeline (pass options.pipeline or set window.ENV.taskPipeline)');
}

function resolvePayload(host: PipelineHost, given: PipelineRunOptions['payload']): Record<string, unknown> {
  if (given !== undefined) return given;
  const search = (globalThis as { location?: { search?: string } }).location?.search ?? '';
  const raw = new URLSearchParams(search).get('payload');
  if (raw === null || raw === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new host.ClientError('INVALID_ARGUMENT', `Pipeline.run: the payload query parameter is not valid JSON (${(error as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new host.ClientError('INVALID_ARGUMENT', 'Pipeline.run: the payload query parameter must be a JSON object');
  return parsed as Record<string, unknown>;
}

function customFunctions(host: PipelineHost, extra: FunctionPackageSource[] | undefined): FunctionPackageSource[] {
  const byPackage = new Map<string, FunctionPackageSource>();
  const fromPage = pageEnv().taskFunctions;
  if (Array.isArray(fromPage)) for (const f of fromPage) if (f && typeof f.package === 'string' && typeof f.code === 'string') byPackage.set(f.package, f);
  for (const f of host.registered()) byPackage.set(f.package, f);
  for (const f of extra ?? []) byPackage.set(f.package, f);
  return [...byPackage.values()];
}

function logTrace(ctx: ClientContext, outcome: RunOutcome): void {
  const c = globalThis.console;
  const title = outcome.ok
    ? `Pipeline finished in ${outcome.durationMs} ms`
    : `Pipeline failed after ${outcome.durationMs} ms: ${outcome.error.errorType}: ${outcome.error.errorMessage}`;
  if (typeof c?.groupCollapsed === 'function') c.groupCollapsed(`[in-app-runtime] ${title}`);
  else ctx.logger.info(title);
  if (typeof c?.table === 'function') c.table(outcome.trace);
  else ctx.logger.info('trace', outcome.trace);
  if (outcome.ok) c?.log?.('result', outcome.result);
  if (typeof c?.groupEnd === 'function') c.groupEnd();
}

/** Runs the page's pipeline on this device and resolves with the whole outcome (result or error, trace, duration). */
export async function runWithTrace(host: PipelineHost, options: PipelineRunOptions = {}): Promise<RunOutcome> {
  const { ctx } = host;
  const functions = resolvePipeline(host, options.pipeline);
  const payload = resolvePayload(host, options.payload);
  const config = ctx.config();
  const inPage = options.inPage;
  const { runPipeline } = await host.loadEngine({ assetsUrl: config.assetsUrl, logger: ctx.logger, ...(inPage ? { inline: true } : {}) });
  const outcome = await runPipeline({
    functions,
    payload,
    context: { trigger: 'manual', ...(options.context ?? {}) },
    environment: 'client',
    services: options.services ?? host.services(),
    customFunctions: customFunctions(host, options.customFunctions),
    limits: {
      runTimeoutMs: config.limits.runTimeoutMs,
      payloadChars: config.limits.payloadChars,
      resultBytes: config.limits.resultBytes,
      ...(options.limits ?? {}),
    },
    signal: options.signal,
    ...(inPage ? { inPage } : {}),
  });
  if (options.log !== false) logTrace(ctx, outcome);
  return outcome;
}
