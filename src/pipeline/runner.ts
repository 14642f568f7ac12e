import { HOST_BUILTINS } from '../functions/builtins.js';
import { createBridge } from '../functions/bridge.js';
import { builtinName } from '../functions/catalog.js';
import type { SandboxModule } from '../sandbox/pool.js';
import { closeWhenIdle, openSession, type Session } from '../sandbox/session.js';
import { PipelineFailure, toFailure } from '../contract/pipeline-failure.js';
import { exceedsBytes, resolveLimits, type ResolvedLimits } from './limits.js';
import { asExtension, collectExpressions, type InlineNode, planPipeline, type Plan } from './inline.js';
import { EVENT, REPORT } from './protocol.js';
import { expressionOf, itemsExpression, settingsSpec } from './templates.js';
import { createTrace, type EntryValues, ms, type TraceRecorder } from './trace.js';
import { type EncodedValue, encodeValue, isEncoded } from './trace-values.js';
import { callInPage } from './in-page.js';
import type {
  FunctionNode,
  FunctionPackageSource,
  IfNode,
  InPageFunction,
  LoopNode,
  PipelineNode,
  RunOutcome,
  RunPipelineOptions,
  TraceEntry,
} from '../contract/pipeline.js';
import { validatePipeline } from './validate.js';

/** How the runner gets sandbox modules (the pool in production; tests may pass a debug build). */
export interface EngineHooks {
  acquire(maxBytes: number): Promise<SandboxModule>;
  release(module: SandboxModule): void;
  /** QuickJS stack limit, bytes. */
  stackBytes?: number;
  /** Tests only: run every node in the host walker (the oracle the compiled segments are checked against). */
  walkOnly?: boolean;
  /** Tests only: told the path of every node the host walker runs (none for a pipeline compiled whole). */
  walked?: (path: string) => void;
}

interface Run {
  session: Session;
  options: RunPipelineOptions;
  limits: ResolvedLimits;
  trace: TraceRecorder;
  /** When the run began (`performance.now()`): trace entries start at ms since then. */
  started: number;
  /** `limits.traceValueBytes`, a whole number. */
  valueBytes: number;
  /** Trace values the host computes, by what they describe (the same `if` outcome traced again and again). */
  encoded: Map<string, EntryValues>;
  runDeadline: number;
  ended: boolean;
  expressions: Map<string, number>;
  specs: WeakMap<object, number>;
  scripts: WeakMap<object, number>;
  /** Guest indexes of the compiled script nodes' code, by plan node id (`callCode`). */
  compiledScripts: Map<number, number>;
  customs: Map<string, number>;
  custom: Map<string, FunctionPackageSource>;
  /** Inline segments and host-run nodes of every node list (src/pipeline/inline.ts). */
  plan: Plan;
  /** Where console.log lines go. */
  at: { path: string; pkg: string; iteration: number | undefined };
  /** The segment running: when it began (ms since the run began) and the iteration it runs in. */
  segment: { start: number; iteration: number | undefined };
  /** A failure a guard (guardNode) passes up, traced from its failing node up to `traced` (a plan node id). */
  passing?: { failure: PipelineFailure; traced: number; inLoop: boolean };
  /** `EngineHooks.walked`. */
  walked?: (path: string) => void;
  /** The guarded node whose retry wait is running (`retrySleep`): a failure meanwhile escapes it, as in the walker. */
  sleeping?: number;
}

const now = () => performance.now();
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

/** Runs a pipeline in a fresh sandbox. Never throws for a failing run: returns `{ ok: false, error }`. */
export async function runWith(options: RunPipelineOptions, hooks: EngineHooks): Promise<RunOutcome> {
  const started = now();
  let trace = createTrace(1000);
  const failed = (f: PipelineFailure): RunOutcome => {
    const entries = trace.entries();
    return {
      ok: false,
      error: { errorType: f.errorType, errorMessage: f.message, code: f.code, trace: entries },
      trace: entries,
      durationMs: ms(now() - started),
    };
  };

  let limits: ResolvedLimits;
  let initial: string;
  let shape: { usesUserCode: boolean; hasLoops: boolean };
  const custom = new Map<string, FunctionPackageSource>();
  try {
    limits = resolveLimits(options.limits);
    trace = createTrace(limits.maxTraceEntries, Math.max(16, Math.floor(limits.traceValueBytes)));
    const payload = options.payload ?? {};
    if (!isPlainObject(payload)) throw new PipelineFailure('INVALID_PAYLOAD', 'ValidationError', 'The payload must be a plain object');
    let payloadJson: string;
    try {
      payloadJson = JSON.stringify(payload);
    } catch (error) {
      throw new PipelineFailure('INVALID_PAYLOAD', 'ValidationError', `The payload cannot be serialized to JSON: ${(error as Error).message}`);
    }
    if (payloadJson.length > limits.payloadChars)
      throw new PipelineFailure(
        'PAYLOAD_TOO_LARGE',
        'PayloadTooLargeError',
        `The payload is ${payloadJson.length} characters of JSON; the limit is ${limits.payloadChars}`,
      );
    for (const fn of options.customFunctions ?? []) {
      if (!fn || typeof fn.package !== 'string' || typeof fn.code !== 'string')
        throw new PipelineFailure('INVALID_PIPELINE', 'ValidationError', 'customFunctions entries need a package and code');
      if (!builtinName(fn.package)) custom.set(fn.package, fn);
    }
    shape = validatePipeline({
      functions: options.functions,
      environment: options.environment,
      customPackages: new Set(custom.keys()),
      maxDepth: limits.maxDepth,
    });
    const extra = options.context ?? {};
    if (!isPlainObject(extra)) throw new PipelineFailure('INVALID_PAYLOAD', 'ValidationError', 'The context must be a plain object');
    try {
      initial = JSON.stringify({ payload, ...payload, ...extra });
    } catch (error) {
      throw new PipelineFailure('INVALID_PAYLOAD', 'ValidationError', `The context cannot be serialized to JSON: ${(error as Error).message}`);
    }
    if (options.signal?.aborted) throw new PipelineFailure('ABORTED', 'AbortError', 'The run was cancelled before it started', true);
  } catch (error) {
    return failed(error instanceof PipelineFailure ? error : new PipelineFailure('INVALID_PIPELINE', 'ValidationError', (error as Error).message));
  }

  const runDeadline = started + limits.runTimeoutMs;
  let module: SandboxModule | undefined;
  let session: Session | undefined;
  try {
    module = await hooks.acquire(limits.memoryBytes);
    const run: Run = {
      session: undefined as unknown as Session,
      options,
      limits,
      trace,
      started,
      valueBytes: Math.max(16, Math.floor(limits.traceValueBytes)),
      encoded: new Map(),
      runDeadline,
      ended: false,
      expressions: new Map(),
      specs: new WeakMap(),
      scripts: new WeakMap(),
      compiledScripts: new Map(),
      customs: new Map(),
      custom,
      plan: { source: '', nodes: [], lists: new Map() },
      at: { path: '', pkg: '', iteration: undefined },
      segment: { start: 0, iteration: undefined },
      walked: hooks.walked,
    };
    // Planned as if every expression compiles (the usual case): the program is then installed when the sandbox opens.
    const planned = planFor(options.functions, limits.maxLoopIterations, run.valueBytes);
    const sources = planned.sources;
    if (!hooks.walkOnly) run.plan = planned.plan;
    session = openSession({
      module,
      runDeadline,
      memoryBytes: Math.max(16 * 1024 * 1024, module.maxBytes - 8 * 1024 * 1024),
      stackBytes: hooks.stackBytes,
      signal: options.signal,
      bridge: createBridge(options.services),
      context: initial,
      expressions: sources,
      program: run.plan.source,
      guard: (id, attempt) => guardNode(run, id, attempt),
      caught: (id, failure, took, attempt) => guardCaught(run, id, failure, took, attempt),
      builtin: (id, settings, signal) => callBuiltin(run, id, settings, signal),
      sleep: (id, attempt) => retrySleep(run, id, attempt),
      code: (id, iteration) => callCode(run, id, iteration),
      onConsole: (level, message) =>
        run.trace.add({
          path: run.at.path,
          package: run.at.pkg,
          startMs: sinceStart(run),
          durationMs: 0,
          outcome: 'log',
          message: level === 'log' ? message : `[${level}] ${message}`,
          ...iter(run.at.iteration),
        }),
    });
    run.session = session;
    const bad = new Set(session.badExpressions);
    sources.forEach((source, i) => {
      if (!bad.has(i)) run.expressions.set(source, i);
    });
    if (bad.size > 0 && !hooks.walkOnly) {
      // Nodes using an expression that does not compile run in the host walker, which reports the error where it is reached.
      run.plan = planPipeline(options.functions, (source) => run.expressions.get(source), limits.maxLoopIterations, run.valueBytes);
      if (run.plan.source) session.installProgram(asExtension(run.plan.source));
    }
    if (shape.usesUserCode) session.installCode();
    await runNodes(run, options.functions, 'functions', runDeadline, undefined);
    session.setDeadline(runDeadline);
    const text = session.string('finish', limits.resultBytes);
    if (text === '!' || exceedsBytes(text, limits.resultBytes))
      throw new PipelineFailure('RESULT_TOO_LARGE', 'ResultTooLargeError', `The result is larger than ${limits.resultBytes} bytes of JSON`);
    const result: unknown = text === '' ? undefined : JSON.parse(text);
    return { ok: true, result, trace: trace.entries(), durationMs: ms(now() - started) };
  } catch (error) {
    return failed(toFailure(error));
  } finally {
    // Closed once the answer is out (or by the next session opened on the module): src/sandbox/session.ts.
    if (session) closeWhenIdle(module!, session);
    if (module) hooks.release(module);
  }
}

/** Plans by definition (JSON of the nodes, loop limit, trace value size), most recent last: an action run again is not planned again. */
const plans = new Map<string, { sources: string[]; plan: Plan }>();
const PLANS_KEPT = 64;
/** Definitions larger than this (characters of JSON) are planned at each run rather than kept. */
const PLAN_KEY_CHARS = 64 * 1024;

/** The expression sources and the optimistic plan (every expression compiles) of a pipeline; plans are read-only. */
function planFor(functions: PipelineNode[], maxLoopIterations: number, valueBytes: number): { sources: string[]; plan: Plan } {
  const key = `${maxLoopIterations} ${valueBytes} ${JSON.stringify(functions)}`;
  const kept = plans.get(key);
  if (kept) return kept;
  const sources = collectExpressions(functions);
  const optimistic = new Map(sources.map((source, i) => [source, i]));
  const planned = { sources, plan: planPipeline(functions, (source) => optimistic.get(source), maxLoopIterations, valueBytes) };
  if (key.length <= PLAN_KEY_CHARS) {
    if (plans.size >= PLANS_KEPT) plans.delete(plans.keys().next().value!);
    plans.set(key, planned);
  }
  return planned;
}

const iter = (iteration: number | undefined) => (iteration === undefined ? {} : { iteration });
const sinceStart = (run: Run, at = now()) => ms(at - run.started);
const encode = (run: Run, value: unknown) => encodeValue(value, run.valueBytes);
/** A value encoded by the guest (`tv`, `tvLoop`): undefined for none or for malformed data. */
function guestValue(text: string): EncodedValue | undefined {
  if (text === '') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isEncoded(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The input and output of an `if` node: the conditions tested (true for the one that matched) and the branch taken. */
function ifValues(run: Run, count: number, matched: number | 'else' | 'none'): EntryValues {
  const key = `if ${count} ${matched}`;
  let values = run.encoded.get(key);
  if (!values) {
    const tested = typeof matched === 'number' ? matched + 1 : count;
    values = {
      input: encode(run, { conditions: Array.from({ length: tested }, (_, i) => i === matched) }),
      output: encode(run, { branch: typeof matched === 'number' ? `conditions[${matched}]` : matched === 'else' ? 'elseFunctions' : null }),
    };
    run.encoded.set(key, values);
  }
  return values;
}

async function runNodes(run: Run, nodes: PipelineNode[] | undefined, base: string, deadline: number, iteration: number | undefined): Promise<void> {
  if (!nodes) return;
  const steps = run.plan.lists.get(base) ?? nodes.map((_, host) => ({ host }));
  for (const step of steps) {
    if (run.ended) return;
    if ('segment' in step) {
      if (step.async) await runAsyncSegment(run, step.segment, deadline, iteration);
      else runSegment(run, step.segment, deadline, iteration);
      continue;
    }
    const node = nodes[step.host]!;
    const path = `${base}[${step.host}]`;
    run.walked?.(path);
    if (node.type === 'loop') await runLoop(run, node, path, deadline, iteration);
    else if (node.type === 'if') await runIf(run, node, path, deadline, iteration);
    else await runFunction(run, node, path, deadline, iteration);
  }
}

const EVENT_OUTCOME: Record<number, (x: number) => Pick<TraceEntry, 'outcome' | 'message'>> = {
  [EVENT.ok]: () => ({ outcome: 'ok' }),
  [EVENT.skipped]: () => ({ outcome: 'skipped', message: 'condition is false' }),
  [EVENT.matched]: (x) => ({ outcome: 'ok', message: `conditions[${x}] matched` }),
  [EVENT.else]: () => ({ outcome: 'ok', message: 'else' }),
  [EVENT.none]: () => ({ outcome: 'ok', message: 'no condition matched' }),
  [EVENT.iterations]: (x) => ({ outcome: 'ok', message: `${x} iterations` }),
  [EVENT.noItems]: () => ({ outcome: 'ok', message: '0 iterations (no items)' }),
};

/** Runs an inline segment in one guest call and records its trace events (or its failure, node by node). */
function runSegment(run: Run, segment: number, deadline: number, iteration: number | undefined): void {
  const room = run.trace.room();
  const start = sinceStart(run);
  run.segment = { start, iteration };
  run.passing = undefined;
  let text: string;
  try {
    // The ms left before the session's deadline: the guest moves it only for node timeouts that end sooner.
    const left = Math.max(0, Math.min(deadline, run.runDeadline) - now());
    text = run.session.string('run', segment, iteration ?? -1, room.ordinary, room.important, left);
  } catch (error) {
    throw segmentFailure(run, error, deadline);
  }
  if (recordEvents(run, text, start)) run.ended = true;
}

/**
 * Runs an async segment (one that awaits host built-ins): the guest runs it to the end, awaiting the host where a
 * node needs it (`callBuiltin`); then its events are recorded, or its failure traced, as for any segment.
 */
async function runAsyncSegment(run: Run, segment: number, deadline: number, iteration: number | undefined): Promise<void> {
  const room = run.trace.room();
  const start = sinceStart(run);
  run.segment = { start, iteration };
  run.passing = undefined;
  const s = run.session;
  let text: string;
  try {
    const left = Math.max(0, Math.min(deadline, run.runDeadline) - now());
    await s.settleProgram('go', segment, iteration ?? -1, room.ordinary, room.important, left);
    // The node deadlines the segment entered are all left; the report is collected under the one it began with.
    s.setDeadline(deadline);
    text = s.string('run', -1);
  } catch (error) {
    throw segmentFailure(run, error, deadline);
  }
  if (recordEvents(run, text, start)) run.ended = true;
}

/**
 * The host side of an async segment's built-in request (`HQ(builtin, id, settings)`, protocol.ts): the node must
 * be one the plan compiled as that built-in, and its settings are checked and parsed as the walker does. Resolves
 * with the result's JSON text; rejects with the node's failure. The session bounds the wait and aborts `signal`.
 */
async function callBuiltin(run: Run, id: number, text: string, signal: AbortSignal): Promise<string> {
  const node = Number.isInteger(id) ? run.plan.nodes[id] : undefined;
  const name = node?.builtin;
  const builtin = name !== undefined && Object.hasOwn(HOST_BUILTINS, name) ? HOST_BUILTINS[name] : undefined;
  if (!node || !builtin) throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox asked for a built-in that is not in the program', true);
  try {
    const max = run.limits.resultBytes;
    if (exceedsBytes(text, max)) throw new PipelineFailure('FUNCTION_FAILED', 'ValidationError', `The settings are larger than ${max} bytes`);
    let settings: unknown;
    try {
      settings = text === '' ? {} : JSON.parse(text);
    } catch {
      throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox sent settings that are not JSON', true);
    }
    if (!isPlainObject(settings)) throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox sent settings that are not an object', true);
    const value = await builtin({ settings, services: run.options.services, environment: run.options.environment, signal, maxBytes: max });
    const json = value === undefined ? '' : JSON.stringify(value);
    if (json.length > max) throw new PipelineFailure('FUNCTION_FAILED', 'ResultTooLargeError', `${node.pkg} returned more than ${max} bytes`);
    return json ?? '';
  } catch (error) {
    throw toFailure(error, 'FUNCTION_FAILED');
  }
}

/**
 * The node a user-code request (`HQ(code, id)`) names, if the plan compiled it as user code (and, for a custom
 * function, the run has its code); anything else is a tampered program: the run fails as a crash.
 */
export function userCodeNode(plan: Plan, id: number, custom: ReadonlyMap<string, unknown>): InlineNode & { code: NonNullable<InlineNode['code']> } {
  const node = Number.isInteger(id) && id >= 0 ? plan.nodes[id] : undefined;
  if (!node?.code || (node.code.kind === 'custom' && !custom.has(node.pkg)))
    throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox asked for user code that is not in the program', true);
  return node as InlineNode & { code: NonNullable<InlineNode['code']> };
}

/**
 * The host side of an async segment's user-code request (`HQ(code, id, iteration)`, protocol.ts): the node must be
 * one the plan compiled as user code; it runs exactly as the walker runs it (`runFunction`): the guest's `call`
 * helper, with the settings the program left in `st.cur`, under a nested settle bounded by the deadline in force
 * (the node's, moved by the program's `DP`, or one around it), or the page's function in page mode. What the segment
 * recorded before it is traced first, so that the code's console lines come after it, as in the walker. Resolves
 * with `[room, room for failures and logs]` (the trace's, for the program's listing), plus the returned value in
 * page mode; rejects with the node's failure.
 */
async function callCode(run: Run, id: number, iteration: number): Promise<string> {
  const node = userCodeNode(run.plan, id, run.custom);
  const code = node.code;
  const s = run.session;
  recordEvents(
    run,
    s.grace(REPORT_GRACE_MS, () => s.string('run', -2)),
    run.segment.start,
  );
  run.at = { path: node.path, pkg: node.pkg, iteration: Number.isInteger(iteration) && iteration >= 0 ? iteration : undefined };
  let returned = '';
  try {
    const page = run.options.inPage;
    if (page) {
      const fn = code.kind === 'script' ? page.script(node.path, code.source ?? '') : page.custom(node.pkg, run.custom.get(node.pkg)!.code);
      const value = await pageCall(run, s.deadline, fn, code.kind === 'script' ? `script node ${node.path}` : `custom function ${node.pkg}`);
      if (value !== undefined) returned = JSON.stringify(value);
    } else {
      let index = code.kind === 'script' ? run.compiledScripts.get(id) : run.customs.get(node.pkg);
      if (index === undefined) {
        index = code.kind === 'script' ? s.number('script', code.source ?? '') : s.number('custom', run.custom.get(node.pkg)!.code);
        if (code.kind === 'script') run.compiledScripts.set(id, index);
        else run.customs.set(node.pkg, index);
      }
      await s.settle('call', index, code.kind === 'script' ? 1 : 0);
    }
  } catch (error) {
    throw toFailure(error, 'FUNCTION_FAILED');
  }
  const room = run.trace.room();
  return `[${room.ordinary},${room.important}${returned === '' ? '' : `,${returned}`}]`;
}

/**
 * Adds a segment's events to the trace (the guest's `[ended, events, messages, aggregated, …, values]`);
 * returns whether a `return` ended the run. Malformed data (guest code can tamper with the
 * built-ins the guest serializes with) fails the run instead of reaching the trace.
 * `segmentStart`: when the segment began, ms since the run began (events' starts are relative to it).
 */
function recordEvents(run: Run, text: string, segmentStart: number, retried?: { node: number; retries: number }): boolean {
  const bad = () => new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox returned malformed trace data', true);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw bad();
  }
  if (!Array.isArray(data) || !Array.isArray(data[1]) || !Array.isArray(data[2]) || typeof data[3] !== 'object' || data[3] === null) throw bad();
  const [ended, events, messages, aggregated] = data as [unknown, unknown[], unknown[], Record<string, unknown>];
  const encoded = Array.isArray(data[8]) ? (data[8] as unknown[]) : [];
  const nodes = run.plan.nodes;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : NaN);
  const value = (v: unknown) => (isEncoded(v) ? v : undefined);
  // A guarded node that succeeded after retries: its last event carries the count, as the walker's entry does.
  let retriedAt = -1;
  if (retried) for (let i = 0; i + 6 < events.length; i += 7) if (events[i] === retried.node && events[i + 2] !== EVENT.log) retriedAt = i;
  for (let i = 0; i + 6 < events.length; i += 7) {
    const node = nodes[num(events[i])];
    const it = num(events[i + 1]);
    const code = num(events[i + 2]);
    const x = num(events[i + 3]);
    const outcome = EVENT_OUTCOME[code];
    const message = code === EVENT.log ? messages[x] : undefined;
    if (!node || Number.isNaN(it) || Number.isNaN(x) || (code === EVENT.log ? typeof message !== 'string' : !outcome)) throw bad();
    const entry: TraceEntry = {
      path: node.path,
      package: node.pkg,
      startMs: ms(segmentStart + Math.max(0, num(events[i + 5]) || 0)),
      durationMs: Math.max(0, num(events[i + 4]) || 0),
      outcome: 'log',
    };
    if (it >= 0) entry.iteration = it;
    if (code === EVENT.log) {
      entry.message = message as string;
      run.trace.add(entry);
      continue;
    }
    const result = outcome!(x);
    entry.outcome = result.outcome;
    if (result.message !== undefined) entry.message = result.message;
    if (i === retriedAt) entry.retries = retried!.retries;
    const v = num(events[i + 6]);
    let values: EntryValues | undefined;
    if (node.kind === 'if') values = ifValues(run, node.conditions ?? 0, code === EVENT.matched ? x : code === EVENT.else ? 'else' : 'none');
    else if (code === EVENT.noItems) values = { input: encode(run, { items: null }), output: encode(run, { iterations: 0 }) };
    else if (node.kind === 'loop') values = { input: value(encoded[v]), output: encode(run, { iterations: x }) };
    else if (v >= 0) {
      // The guest sends 1 for an output that is the input itself (a `set`).
      const input = value(encoded[v]);
      values = { input, output: encoded[v + 1] === 1 ? input : value(encoded[v + 1]) };
    }
    run.trace.add(entry, values);
  }
  for (const [key, counts] of Object.entries(aggregated)) {
    const node = nodes[Number(key.slice(1))];
    if (!node || !Array.isArray(counts)) throw bad();
    const [ok, skipped, logs, durationMs] = counts.map((v) => Math.max(0, num(v) || 0));
    run.trace.aggregate(node.path, node.pkg, 'ok', ok!, durationMs!);
    run.trace.aggregate(node.path, node.pkg, 'skipped', skipped!, 0);
    run.trace.aggregate(node.path, node.pkg, 'log', logs!, 0);
  }
  return ended === 1;
}

/** The failure of an inline segment: what ran before it, then the failing node and its inline ancestors, traced as the host walker would. */
function segmentFailure(run: Run, error: unknown, deadline: number): PipelineFailure {
  const { failure: f, inLoop } = traceFailure(run, error, -1);
  const s = run.session;
  if (inLoop && !f.fatal && !s.closed) {
    // Restore currentItem/currentIndex as they were before the segment (a policy up the tree may let the run go on).
    try {
      s.setDeadline(run.runDeadline);
      s.void('unwind');
    } catch {
      /* the run is failing already */
    } finally {
      s.setDeadline(deadline);
    }
  }
  return f;
}

/**
 * The wall-clock bound on reading the guest's report of a segment (its trace events and failure), which only the
 * engine's own helper writes. It is a bound on the engine's work, not a budget of the run: 20 ms was lost whole on a
 * machine loaded far past its cores (the process descheduled), and the failure came back without its trace.
 */
const REPORT_GRACE_MS = 250;

/**
 * Traces a failure inside the running segment: the events recorded before it (the guest's report), then a failed
 * entry for the failing node and each inline ancestor below `stopAt` (-1: the segment's top), as the walker would.
 * A failure a guard passed up (`run.passing`) is traced on from where that guard stopped.
 */
function traceFailure(run: Run, error: unknown, stopAt: number): { failure: PipelineFailure; inLoop: boolean; indexes: unknown; input?: EncodedValue } {
  const s = run.session;
  // The guest's report, collected under a short deadline of its own (also after an interrupt).
  let report: unknown[] = [];
  if (!s.closed) {
    try {
      const text = s.grace(REPORT_GRACE_MS, () => s.string('run', -1));
      recordEvents(run, text, run.segment.start);
      report = JSON.parse(text) as unknown[];
    } catch {
      /* a crashed, exhausted or cancelled sandbox: only the error is reported */
    }
  }
  const [id, condition, engine, indexes, attempts, awaited] = (['node', 'condition', 'engine', 'loopIndexes', 'attempts', 'awaited'] as const).map(
    (key) => report[REPORT[key]],
  );
  // The settings of an awaiting node whose host call failed: the input of its failed (or retried) entry.
  const input = Array.isArray(awaited) && awaited[0] === id && isEncoded(awaited[1]) ? (awaited[1] as EncodedValue) : undefined;
  // A failure while a retry waited (the run's time, a cancel) escapes that node untraced, as in the walker.
  const passing = run.passing ?? (run.sleeping === undefined ? undefined : { failure: toFailure(error), traced: run.sleeping, inLoop: false });
  run.passing = undefined;
  run.sleeping = undefined;
  let f: PipelineFailure;
  let from: number;
  const failing = passing ? -2 : id;
  let inLoop = passing?.inLoop ?? false;
  if (passing) {
    f = passing.failure;
    from = run.plan.nodes[passing.traced]!.parent;
  } else {
    const node = typeof id === 'number' ? run.plan.nodes[id] : undefined;
    if (!node) return { failure: toFailure(error), inLoop, indexes };
    f = toFailure(error, node.kind === 'function' ? 'FUNCTION_FAILED' : 'EXPRESSION_FAILED');
    if (!f.fatal && typeof engine === 'string' && engine !== '') {
      const [code, type, message] = JSON.parse(engine) as [string, string, string];
      f = new PipelineFailure(String(code), String(type), String(message));
    } else if (node.kind === 'if' && !f.fatal && f.code === 'EXPRESSION_FAILED') {
      f = new PipelineFailure(f.code, f.errorType, `conditions[${Number(condition)}].condition: ${f.message}`);
    }
    from = id as number;
  }
  const failedAt = sinceStart(run);
  for (let at = from; at >= 0 && at !== stopAt; at = run.plan.nodes[at]!.parent) {
    const n = run.plan.nodes[at]!;
    inLoop ||= n.kind === 'loop';
    // A function node has finished (ok) before its nested functions run: the walker does not trace it again.
    if (at !== failing && n.kind === 'function') continue;
    const k = n.loop >= 0 && Array.isArray(indexes) ? indexes[n.loop] : run.segment.iteration;
    // A guarded node the guest ran (WC) that failed past its catch (an interrupt): its attempts so far.
    const tries = n.guard && attempts !== null && typeof attempts === 'object' ? Number((attempts as Record<string, unknown>)[at]) : 0;
    run.trace.add(
      {
        path: n.path,
        package: n.pkg,
        startMs: failedAt,
        durationMs: 0,
        outcome: 'failed',
        message: `${f.errorType}: ${f.message}`,
        ...iter(typeof k === 'number' ? k : undefined),
        ...(tries > 1 ? { retries: tries - 1 } : {}),
      },
      at === failing && input ? { input } : undefined,
    );
  }
  return { failure: f, inLoop, indexes, ...(!passing && id === stopAt && input ? { input } : {}) };
}

/**
 * The host side of a node with `retry` or `continueOnError` inside a segment (`W` → `GH`, inline.ts): runs its
 * attempts and traces them as withPolicies does. 1: the node ran; 0: it failed and the run goes on (its
 * `lastError` set). Throws a failure to pass up (traced up to this node).
 */
function guardNode(run: Run, id: number, attempt: () => PipelineFailure | undefined): number {
  const node = guarded(run, id);
  for (let k = 1; ; k++) {
    const start = now();
    const failed = attempt();
    if (!failed) return succeeded(run, id, k);
    const next = attemptFailed(run, node, id, k, start, failed);
    if (next !== 2) return next;
  }
}

/** The same for a node whose attempts the guest runs (`WC`): the host hears only of failed attempts (and of a success after them). */
function guardCaught(run: Run, id: number, failure: PipelineFailure | undefined, took: number, attempt: number): number {
  const node = guarded(run, id);
  const k = Math.max(1, Math.floor(attempt) || 1);
  if (!failure) return succeeded(run, id, k);
  // The guest's clock says how long the attempt took; it cannot have begun before the segment.
  const start = Math.max(now() - (Number.isFinite(took) ? Math.max(0, took) : 0), run.started + run.segment.start);
  return attemptFailed(run, node, id, k, start, failure);
}

function guarded(run: Run, id: number): InlineNode & { guard: NonNullable<InlineNode['guard']> } {
  const node = run.plan.nodes[id];
  if (!node?.guard) throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox called a guard that does not exist', true);
  return node as InlineNode & { guard: NonNullable<InlineNode['guard']> };
}

/** After retries, the events so far: the node's last one carries the count, as the walker's entry does. */
function succeeded(run: Run, id: number, attempt: number): number {
  if (attempt > 1) {
    const s = run.session;
    recordEvents(
      run,
      s.grace(REPORT_GRACE_MS, () => s.string('run', -1)),
      run.segment.start,
      { node: id, retries: attempt - 1 },
    );
  }
  return 1;
}

/**
 * Traces attempt `k` of a guarded node that failed; 2: try again, 0: give up and go on; throws to pass the failure
 * up (traced up to this node). As in the walker, an attempt that would start past the node's deadline fails at once.
 */
function attemptFailed(
  run: Run,
  node: InlineNode & { guard: NonNullable<InlineNode['guard']> },
  id: number,
  first: number,
  begun: number,
  failed: PipelineFailure,
): number {
  const traced = traceFailure(run, failed, id);
  let f = traced.failure;
  // The settings the failed attempt sent to the host (the walker traces each attempt with its input).
  let values: EntryValues | undefined = traced.input ? { input: traced.input } : undefined;
  const { indexes } = traced;
  const inLoop = traced.inLoop || node.kind === 'loop';
  const passUp = (failure: PipelineFailure) => {
    run.passing = { failure, traced: id, inLoop };
    return failure;
  };
  const i = node.loop >= 0 && Array.isArray(indexes) ? indexes[node.loop] : run.segment.iteration;
  for (let k = first, start = begun; ; k++, start = now()) {
    const entry = {
      path: node.path,
      package: node.pkg,
      startMs: sinceStart(run, start),
      durationMs: ms(now() - start),
      ...iter(typeof i === 'number' ? i : undefined),
      message: `${f.errorType}: ${f.message}`,
    };
    if (!f.fatal && k < node.guard.attempts) {
      run.trace.add({ ...entry, outcome: 'retried' }, values);
      values = undefined;
      // A retry that waits: the guest awaits the wait (retrySleep), then its next attempt checks the deadline.
      if (node.guard.wait) return 2;
      // As the walker checks the run's time before another attempt (a failure that escapes the node).
      if (run.options.signal?.aborted || now() > run.runDeadline) throw passUp(timeoutFailure(run));
      if (now() <= run.session.deadline) return 2;
      f = timeoutFailure(run);
      continue;
    }
    run.trace.add({ ...entry, ...(k > 1 ? { retries: k - 1 } : {}), outcome: 'failed' }, values);
    if (f.fatal || !node.guard.continueOnError) throw passUp(f);
    try {
      run.session.void(
        'put',
        'lastError',
        JSON.stringify({ errorType: f.errorType, errorMessage: f.message, code: f.code, path: node.path, package: node.pkg }),
      );
    } catch (error) {
      // Past the deadline in force: the walker's put fails the same way, after the node's entry.
      throw passUp(toFailure(error));
    }
    return 0;
  }
}

/**
 * The host side of `HQ(sleep, id, attempt)` (protocol.ts): the wait of a guarded node's retry after `attempt` failed,
 * from the plan's policy (never the guest's word), cut at the deadline around the node, as withPolicies waits;
 * then the run's time is checked. A failure escapes the node (run.passing), as it escapes withPolicies.
 */
async function retrySleep(run: Run, id: number, attempt: number): Promise<void> {
  const node = guarded(run, id);
  const wait = node.guard.wait;
  if (!wait || !Number.isInteger(attempt) || attempt < 1 || attempt >= node.guard.attempts)
    throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox asked for a retry wait that is not in the program', true);
  run.sleeping = id;
  try {
    await retryWait(run, wait.exponential ? wait.delayMs * 2 ** (attempt - 1) : wait.delayMs, run.session.deadline);
  } catch (error) {
    if (run.sleeping === id) run.passing = { failure: toFailure(error), traced: id, inLoop: false };
    throw error;
  } finally {
    if (run.sleeping === id) run.sleeping = undefined;
  }
}

function timeoutFailure(run: Run): PipelineFailure {
  if (run.options.signal?.aborted) return new PipelineFailure('ABORTED', 'AbortError', 'The run was cancelled', true);
  const runLevel = now() >= run.runDeadline - 0.5;
  return new PipelineFailure('TIMEOUT', 'TimeoutError', runLevel ? 'The run exceeded its time limit' : 'The function exceeded its timeout', runLevel);
}

function checkTime(run: Run, deadline: number): void {
  if (run.options.signal?.aborted || now() > deadline) throw timeoutFailure(run);
}

/** Compiles an expression once per run. */
function expression(run: Run, source: string): number {
  let index = run.expressions.get(source);
  if (index === undefined) {
    try {
      index = run.session.number('fn', source);
    } catch (error) {
      const f = toFailure(error, 'EXPRESSION_FAILED');
      if (f.fatal) throw f;
      throw new PipelineFailure('EXPRESSION_FAILED', f.errorType, `Invalid expression ${JSON.stringify(source)}: ${f.message}`);
    }
    run.expressions.set(source, index);
  }
  return index;
}

/** Records one node's outcome around `body`, applying its timeout, retry and continueOnError policies. */
async function withPolicies(
  run: Run,
  node: PipelineNode,
  path: string,
  pkg: string,
  parentDeadline: number,
  iteration: number | undefined,
  guestCode: string,
  body: (deadline: number, values: EntryValues) => Promise<'ok' | 'skipped' | { message: string }>,
): Promise<boolean> {
  const retry = node.type === undefined || node.type === 'function' ? node.retry : undefined;
  const attempts = retry?.attempts ?? 1;
  for (let attempt = 1; ; attempt++) {
    const start = now();
    const deadline = node.timeout ? Math.min(parentDeadline, start + node.timeout) : parentDeadline;
    // What the body traced of this attempt's input and output (only while the trace lists entries).
    const values: EntryValues = {};
    run.session.setDeadline(deadline);
    run.at = { path, pkg, iteration };
    const head = () => ({ path, package: pkg, startMs: sinceStart(run, start), durationMs: ms(now() - start), ...iter(iteration) });
    const retries = attempt > 1 ? { retries: attempt - 1 } : {};
    try {
      checkTime(run, deadline);
      const outcome = await body(deadline, values);
      const entry = { ...head(), ...retries };
      if (outcome === 'skipped') run.trace.add({ ...entry, outcome: 'skipped', message: 'condition is false' }, values);
      else if (outcome === 'ok') run.trace.add({ ...entry, outcome: 'ok' }, values);
      else run.trace.add({ ...entry, outcome: 'ok', message: outcome.message }, values);
      return outcome !== 'skipped';
    } catch (error) {
      const f = toFailure(error, guestCode);
      const entry = { ...head(), message: `${f.errorType}: ${f.message}` };
      if (!f.fatal && attempt < attempts) {
        run.trace.add({ ...entry, outcome: 'retried' }, values);
        const base = retry?.delayMs ?? 0;
        await retryWait(run, retry?.backoff === 'exponential' ? base * 2 ** (attempt - 1) : base, parentDeadline);
        continue;
      }
      run.trace.add({ ...entry, ...retries, outcome: 'failed' }, values);
      if (!f.fatal && node.continueOnError) {
        run.session.setDeadline(parentDeadline);
        run.session.void('put', 'lastError', JSON.stringify({ errorType: f.errorType, errorMessage: f.message, code: f.code, path, package: pkg }));
        return false;
      }
      throw f;
    } finally {
      run.session.setDeadline(parentDeadline);
    }
  }
}

/**
 * The wait between two attempts of a retry (both paths): `delay`, cut at the deadline around the node, where it wakes
 * just past it, so that the next attempt fails at once; then the run's time is checked (a failure that escapes the
 * node). A timer counts from the event loop's clock, read once per turn, so after a long turn it fires early: a wait
 * cut at the deadline sleeps again until the deadline has passed (or the run is cancelled).
 */
async function retryWait(run: Run, delay: number, around: number): Promise<void> {
  const left = Math.max(0, around - now());
  if (delay <= 0 || delay < left) await sleep(run, delay);
  else {
    do await sleep(run, Math.max(0, around - now()) + 1);
    while (now() <= around && !run.options.signal?.aborted);
  }
  checkTime(run, run.runDeadline);
}

function sleep(run: Run, delay: number): Promise<void> {
  if (delay <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, delay);
    const signal = run.options.signal;
    signal?.addEventListener('abort', done);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

async function runFunction(run: Run, node: FunctionNode, path: string, parentDeadline: number, iteration: number | undefined): Promise<void> {
  const pkg = node.functionPackage;
  const ran = await withPolicies(run, node, path, pkg, parentDeadline, iteration, 'FUNCTION_FAILED', async (deadline, values) => {
    const s = run.session;
    const name = builtinName(pkg);
    const traced = run.trace.listing();
    /** Guest values of the trace: 0 the settings, 1 their `value`, 2 what user code returned. */
    const tv = (which: 0 | 1 | 2) => (traced ? guestValue(s.string('tv', which, run.valueBytes)) : undefined);
    let spec = run.specs.get(node);
    if (spec === undefined) {
      const built = settingsSpec(node.settings, {
        compile: (e) => expression(run, e),
        expressionKeys: ['condition'],
        literalKeys: name === 'script' ? ['code'] : [],
      });
      spec = s.number('spec', JSON.stringify(built));
      run.specs.set(node, spec);
    }
    if (name === 'set') {
      const set = s.number('set', spec) === 1;
      values.input = tv(0);
      if (set) values.output = values.input;
      return set ? 'ok' : 'skipped';
    }
    if (name === 'return') {
      const returned = s.number('ret', spec) === 1;
      values.input = tv(0);
      if (!returned) return 'skipped';
      values.output = tv(1);
      run.ended = true;
      return 'ok';
    }
    const prepared = s.number('prep', spec) === 1;
    values.input = tv(0);
    if (!prepared) return 'skipped';
    switch (name) {
      case 'if':
        return 'ok';
      case 'log': {
        const message = s.string('message');
        run.trace.add({ path, package: pkg, startMs: sinceStart(run), durationMs: 0, outcome: 'log', message, ...iter(iteration) });
        return 'ok';
      }
      case 'script': {
        if (run.options.inPage) return inPage(run, deadline, values, run.options.inPage.script(path, String(node.settings!.code)), `script node ${path}`);
        let index = run.scripts.get(node);
        if (index === undefined) {
          index = s.number('script', String(node.settings!.code));
          run.scripts.set(node, index);
        }
        await s.settle('call', index, 1);
        values.output = tv(2);
        return 'ok';
      }
      case undefined: {
        if (run.options.inPage) return inPage(run, deadline, values, run.options.inPage.custom(pkg, run.custom.get(pkg)!.code), `custom function ${pkg}`);
        let index = run.customs.get(pkg);
        if (index === undefined) {
          index = s.number('custom', run.custom.get(pkg)!.code);
          run.customs.set(pkg, index);
        }
        await s.settle('call', index, 0);
        values.output = tv(2);
        return 'ok';
      }
      default: {
        const text = s.string('settings', run.limits.resultBytes);
        if (text === '!' || exceedsBytes(text, run.limits.resultBytes))
          throw new PipelineFailure('FUNCTION_FAILED', 'ValidationError', `The settings are larger than ${run.limits.resultBytes} bytes`);
        const settings = (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>;
        const value = await awaitHost(run, deadline, (signal) =>
          HOST_BUILTINS[name]!({ settings, services: run.options.services, environment: run.options.environment, signal, maxBytes: run.limits.resultBytes }),
        );
        const json = value === undefined ? '' : JSON.stringify(value);
        if (json.length > run.limits.resultBytes)
          throw new PipelineFailure('FUNCTION_FAILED', 'ResultTooLargeError', `${pkg} returned more than ${run.limits.resultBytes} bytes`);
        s.void('absorb', json ?? '');
        if (traced) values.output = encode(run, value);
        return 'ok';
      }
    }
  });
  if (ran && !run.ended) await runNodes(run, node.functions, `${path}.functions`, parentDeadline, iteration);
}

/** Page mode (debug in page): the node's code runs as a function of the host page (src/pipeline/in-page.ts). */
async function inPage(run: Run, deadline: number, values: EntryValues, fn: InPageFunction | undefined, what: string): Promise<'ok'> {
  const returned = await pageCall(run, deadline, fn, what);
  // The trace's output, as the sandbox's `tv(2)` would give it (the same encoding on both sides).
  if (run.trace.listing()) values.output = encode(run, returned);
  return 'ok';
}

/** Calls a page function (its settings prepared in the guest), bounded by `deadline`; returns what it returned, as JSON made it. */
async function pageCall(run: Run, deadline: number, fn: InPageFunction | undefined, what: string): Promise<unknown> {
  if (typeof fn !== 'function') throw new PipelineFailure('FUNCTION_FAILED', 'ReferenceError', `Debug in page: the ${what} is not loaded on this page`);
  return callInPage({
    session: run.session,
    fn,
    maxBytes: run.limits.resultBytes,
    services: run.options.services,
    wait: (start) => awaitHost(run, deadline, start),
  });
}

/** Waits for trusted host code, bounded by the deadline (the signal tells the host to give up). */
async function awaitHost<T>(run: Run, deadline: number, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const expired = new Promise<never>((_, reject) => {
    const fire = () => {
      controller.abort();
      reject(timeoutFailure(run));
    };
    timer = setTimeout(fire, Math.max(0, deadline - now()) + 1);
    onAbort = fire;
    run.options.signal?.addEventListener('abort', fire);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => start(controller.signal)), expired]);
  } finally {
    clearTimeout(timer);
    if (onAbort) run.options.signal?.removeEventListener('abort', onAbort);
  }
}

async function runLoop(run: Run, node: LoopNode, path: string, parentDeadline: number, iteration: number | undefined): Promise<void> {
  await withPolicies(run, node, path, 'loop', parentDeadline, iteration, 'EXPRESSION_FAILED', async (deadline, values) => {
    const s = run.session;
    let count: number;
    let from = 0;
    let to = 0;
    if (node.items !== undefined) {
      count = s.number('loop', expression(run, itemsExpression(node.items)));
      if (count === -2) throw new PipelineFailure('EXPRESSION_FAILED', 'TypeError', `loop items ${JSON.stringify(node.items)} is not an array`);
      if (count === -1) {
        if (run.trace.listing()) Object.assign(values, { input: encode(run, { items: null }), output: encode(run, { iterations: 0 }) });
        return { message: '0 iterations (no items)' };
      }
    } else {
      const bound = (v: number | string, key: string): number => {
        const raw = typeof v === 'number' ? undefined : s.string('value', expression(run, expressionOf(v)), 1000);
        let value: unknown = v;
        if (raw !== undefined) {
          try {
            value = JSON.parse(raw || 'null');
          } catch {
            // Over the copy-out limit ('!'): not an integer either, refused like the inline path refuses it.
            throw new PipelineFailure('EXPRESSION_FAILED', 'TypeError', `loop range.${key} must be an integer, got a value over 1000 characters of JSON`);
          }
        }
        if (typeof value !== 'number' || !Number.isInteger(value))
          throw new PipelineFailure('EXPRESSION_FAILED', 'TypeError', `loop range.${key} must be an integer, got ${JSON.stringify(value)}`);
        return value;
      };
      from = bound(node.range!.from, 'from');
      to = bound(node.range!.to, 'to');
      count = Math.max(0, to - from + 1);
      s.void('range', from);
    }
    try {
      if (count > run.limits.maxLoopIterations)
        throw new PipelineFailure('LOOP_LIMIT', 'LimitError', `The loop has ${count} iterations; the limit is ${run.limits.maxLoopIterations}`);
      for (let k = 0; k < count && !run.ended; k++) {
        checkTime(run, deadline);
        s.void('next');
        await runNodes(run, node.functions, `${path}.functions`, deadline, k);
      }
      if (run.trace.listing()) {
        values.input = node.items !== undefined ? guestValue(s.string('tvLoop', run.valueBytes)) : encode(run, { from, to });
        values.output = encode(run, { iterations: count });
      }
    } finally {
      if (!run.session.closed) {
        try {
          run.session.setDeadline(run.runDeadline);
          s.void('end');
        } catch {
          /* the run is failing already */
        }
        run.session.setDeadline(deadline);
      }
    }
    return { message: `${count} iterations` };
  });
}

async function runIf(run: Run, node: IfNode, path: string, parentDeadline: number, iteration: number | undefined): Promise<void> {
  await withPolicies(run, node, path, 'if', parentDeadline, iteration, 'EXPRESSION_FAILED', async (deadline, values) => {
    for (let i = 0; i < node.conditions.length; i++) {
      const c = node.conditions[i]!;
      let passed: boolean;
      try {
        passed = run.session.number('test', expression(run, expressionOf(c.condition))) === 1;
      } catch (error) {
        const f = toFailure(error, 'EXPRESSION_FAILED');
        if (f.fatal || f.code !== 'EXPRESSION_FAILED') throw f;
        throw new PipelineFailure(f.code, f.errorType, `conditions[${i}].condition: ${f.message}`);
      }
      if (passed) {
        await runNodes(run, c.functions, `${path}.conditions[${i}].functions`, deadline, iteration);
        if (run.trace.listing()) Object.assign(values, ifValues(run, node.conditions.length, i));
        return { message: `conditions[${i}] matched` };
      }
    }
    await runNodes(run, node.elseFunctions, `${path}.elseFunctions`, deadline, iteration);
    if (run.trace.listing()) Object.assign(values, ifValues(run, node.conditions.length, node.elseFunctions ? 'else' : 'none'));
    return { message: node.elseFunctions ? 'else' : 'no condition matched' };
  });
}
