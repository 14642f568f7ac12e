import { HOST_BUILTINS } from '../functions/builtins.js';
import { createBridge } from '../functions/bridge.js';
import { builtinName } from '../functions/catalog.js';
import type { SandboxModule } from '../sandbox/pool.js';
import { closeWhenIdle, openSession, type Session } from '../sandbox/session.js';
import { PipelineFailure, toFailure } from '../contract/pipeline-failure.js';
import { exceedsBytes, resolveLimits, type ResolvedLimits } from './limits.js';
import { asExtension, type BrokenExpression, collectExpressions, type InlineNode, planPipeline, type Plan } from './inline.js';
import { EVENT, REPORT } from './protocol.js';
import { createTrace, type EntryValues, ms, type TraceRecorder } from './trace.js';
import { type EncodedValue, encodeValue, isEncoded } from './trace-values.js';
import { callInPage } from './in-page.js';
import type { FunctionPackageSource, InPageFunction, PipelineNode, RunOutcome, RunPipelineOptions, TraceEntry } from '../contract/pipeline.js';
import { validatePipeline } from './validate.js';

/** How the runner gets sandbox modules (the pool in production; tests may pass a debug build). */
export interface EngineHooks {
  acquire(maxBytes: number): Promise<SandboxModule>;
  release(module: SandboxModule): void;
  /** QuickJS stack limit, bytes. */
  stackBytes?: number;
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
  /** Guest indexes of the compiled script nodes' code, by plan node id (`callCode`). */
  compiledScripts: Map<number, number>;
  customs: Map<string, number>;
  custom: Map<string, FunctionPackageSource>;
  /** The run's compiled program (src/pipeline/inline.ts). */
  plan: Plan;
  /** Where console.log lines go. */
  at: { path: string; pkg: string; iteration: number | undefined };
  /** When the program began, ms since the run began (its trace events' starts are relative to it). */
  programStart: number;
  /** A failure a guard (guardNode) passes up, traced from its failing node up to `traced` (a plan node id). */
  passing?: { failure: PipelineFailure; traced: number; inLoop: boolean };
  /** The guarded node whose retry wait is running (`retrySleep`): a failure meanwhile escapes it, untraced. */
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
      compiledScripts: new Map(),
      customs: new Map(),
      custom,
      plan: { source: '', nodes: [], async: false },
      at: { path: '', pkg: '', iteration: undefined },
      programStart: 0,
    };
    // Planned as if every expression compiles (the usual case): the program is then installed when the sandbox opens.
    const planned = planFor(options.functions, limits.maxLoopIterations, run.valueBytes);
    const sources = planned.sources;
    run.plan = planned.plan;
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
    if (session.badExpressions.length > 0) {
      // Planned again: a node using an expression that does not compile fails when the run reaches it.
      const index = new Map(sources.map((source, i) => [source, i]));
      const bad = new Map(session.badExpressions.map((i) => [sources[i]!, compileOrBreak(session!, sources[i]!)]));
      run.plan = planPipeline(options.functions, (source) => bad.get(source) ?? index.get(source)!, limits.maxLoopIterations, run.valueBytes);
      session.installProgram(asExtension(run.plan.source));
    }
    if (shape.usesUserCode) session.installCode();
    if (run.plan.nodes.length > 0) await runProgram(run);
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
  const planned = { sources, plan: planPipeline(functions, (source) => optimistic.get(source)!, maxLoopIterations, valueBytes) };
  if (key.length <= PLAN_KEY_CHARS) {
    if (plans.size >= PLANS_KEPT) plans.delete(plans.keys().next().value!);
    plans.set(key, planned);
  }
  return planned;
}

const iter = (iteration: number | undefined) => (iteration === undefined ? {} : { iteration });
const sinceStart = (run: Run, at = now()) => ms(at - run.started);
const encode = (run: Run, value: unknown) => encodeValue(value, run.valueBytes);
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

const EVENT_OUTCOME: Record<number, (x: number) => Pick<TraceEntry, 'outcome' | 'message'>> = {
  [EVENT.ok]: () => ({ outcome: 'ok' }),
  [EVENT.skipped]: () => ({ outcome: 'skipped', message: 'condition is false' }),
  [EVENT.matched]: (x) => ({ outcome: 'ok', message: `conditions[${x}] matched` }),
  [EVENT.else]: () => ({ outcome: 'ok', message: 'else' }),
  [EVENT.none]: () => ({ outcome: 'ok', message: 'no condition matched' }),
  [EVENT.iterations]: (x) => ({ outcome: 'ok', message: `${x} iterations` }),
  [EVENT.noItems]: () => ({ outcome: 'ok', message: '0 iterations (no items)' }),
};

/**
 * Runs the program: one guest call, or, when it awaits the host (`Plan.async`), an async guest function the session
 * pumps until it settles (host requests: `callBuiltin`, `callCode`, `retrySleep`); then records its trace events,
 * or traces its failure node by node.
 */
async function runProgram(run: Run): Promise<void> {
  const room = run.trace.room();
  const start = sinceStart(run);
  run.programStart = start;
  run.passing = undefined;
  const s = run.session;
  let text: string;
  try {
    // The ms left before the run's deadline: the guest moves the session's deadline only for node timeouts.
    const left = Math.max(0, run.runDeadline - now());
    if (run.plan.async) {
      await s.settleProgram('go', 0, -1, room.ordinary, room.important, left);
      // The node deadlines the program entered are all left; the report is collected under the run's.
      s.setDeadline(run.runDeadline);
      text = s.string('run', -1);
    } else text = s.string('run', 0, -1, room.ordinary, room.important, left);
  } catch (error) {
    throw programFailure(run, error);
  }
  if (recordEvents(run, text, start)) run.ended = true;
}

/**
 * The host side of the async program's built-in request (`HQ(builtin, id, settings)`, protocol.ts): the node must
 * be one the plan compiled as that built-in, and its settings are checked (size, JSON, a plain object). Resolves
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
 * The host side of the async program's user-code request (`HQ(code, id, iteration)`, protocol.ts): the node must be
 * one the plan compiled as user code; it runs the guest's `call`
 * helper, with the settings the program left in `st.cur`, under a nested settle bounded by the deadline in force
 * (the node's, moved by the program's `DP`, or one around it), or the page's function in page mode. What the program
 * recorded before it is traced first, so that the code's console lines come after it. Resolves
 * with `[room, room for failures and logs]` (the trace's, for the program's listing), plus the returned value in
 * page mode; rejects with the node's failure.
 */
async function callCode(run: Run, id: number, iteration: number): Promise<string> {
  const node = userCodeNode(run.plan, id, run.custom);
  const code = node.code;
  const s = run.session;
  recordEvents(
    run,
    s.grace(REPORT_GRACE_MS, () => s.string('run', -2), true),
    run.programStart,
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
 * Adds the program's events to the trace (the guest's `[ended, events, messages, aggregated, …, values]`);
 * returns whether a `return` ended the run. Malformed data (guest code can tamper with the
 * built-ins the guest serializes with) fails the run instead of reaching the trace.
 * `segmentStart`: when the program began, ms since the run began (events' starts are relative to it).
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
  // A guarded node that succeeded after retries: its last event carries the count.
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

/** The program's failure: what ran before it, then the failing node and the nodes around it, each traced as failed. */
function programFailure(run: Run, error: unknown): PipelineFailure {
  return traceFailure(run, error, -1).failure;
}

/**
 * The wall-clock bound on reading the guest's report of a segment (its trace events and failure), which only the
 * engine's own helper writes. It is a bound on the engine's work, not a budget of the run: 20 ms was lost whole on a
 * machine loaded far past its cores (the process descheduled), and the failure came back without its trace.
 */
const REPORT_GRACE_MS = 250;

/**
 * Traces a failure inside the running program: the events recorded before it (the guest's report), then a failed
 * entry for the failing node and each enclosing node below `stopAt` (-1: the program's top).
 * A failure a guard passed up (`run.passing`) is traced on from where that guard stopped.
 */
function traceFailure(run: Run, error: unknown, stopAt: number): { failure: PipelineFailure; inLoop: boolean; indexes: unknown; input?: EncodedValue } {
  const s = run.session;
  // The guest's report, collected under a short deadline of its own (also after an interrupt).
  let report: unknown[] = [];
  if (!s.closed) {
    try {
      const text = s.grace(REPORT_GRACE_MS, () => s.string('run', -1));
      recordEvents(run, text, run.programStart);
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
  // A failure while a retry waited (the run's time, a cancel) escapes that node untraced.
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
    // A function node has finished (ok) before its nested functions run: it is not traced again.
    if (at !== failing && n.kind === 'function') continue;
    const k = n.loop >= 0 && Array.isArray(indexes) ? indexes[n.loop] : undefined;
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
 * The host side of a node with `retry` or `continueOnError` inside the program (`W` → `GH`, inline.ts): runs its
 * attempts and traces each (`retried`, then `failed` or the success with its `retries`). 1: the node ran; 0: it failed and the run goes on (its
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
  // The guest's clock says how long the attempt took; it cannot have begun before the program.
  const start = Math.max(now() - (Number.isFinite(took) ? Math.max(0, took) : 0), run.started + run.programStart);
  return attemptFailed(run, node, id, k, start, failure);
}

function guarded(run: Run, id: number): InlineNode & { guard: NonNullable<InlineNode['guard']> } {
  const node = run.plan.nodes[id];
  if (!node?.guard) throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox called a guard that does not exist', true);
  return node as InlineNode & { guard: NonNullable<InlineNode['guard']> };
}

/** After retries, the events so far: the node's last one carries the count. */
function succeeded(run: Run, id: number, attempt: number): number {
  if (attempt > 1) {
    const s = run.session;
    recordEvents(
      run,
      s.grace(REPORT_GRACE_MS, () => s.string('run', -1), true),
      run.programStart,
      { node: id, retries: attempt - 1 },
    );
  }
  return 1;
}

/**
 * Traces attempt `k` of a guarded node that failed; 2: try again, 0: give up and go on; throws to pass the failure
 * up (traced up to this node). An attempt that would start past the node's deadline fails at once.
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
  // The settings the failed attempt sent to the host (each attempt is traced with its input).
  let values: EntryValues | undefined = traced.input ? { input: traced.input } : undefined;
  const { indexes } = traced;
  const inLoop = traced.inLoop || node.kind === 'loop';
  const passUp = (failure: PipelineFailure) => {
    run.passing = { failure, traced: id, inLoop };
    return failure;
  };
  const i = node.loop >= 0 && Array.isArray(indexes) ? indexes[node.loop] : undefined;
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
      // The run's time is checked before another attempt (a failure that escapes the node).
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
      // Past the deadline in force: the put fails, after the node's entry.
      throw passUp(toFailure(error));
    }
    return 0;
  }
}

/**
 * The host side of `HQ(sleep, id, attempt)` (protocol.ts): the wait of a guarded node's retry after `attempt` failed,
 * from the plan's policy (never the guest's word), cut at the deadline around the node (`retryWait`);
 * then the run's time is checked. A failure escapes the node (run.passing), untraced.
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

/**
 * An expression the base script could not compile, compiled again alone: the compiler's error (its type and
 * message), which the node using it reports when the run reaches it; or its index, if it compiles after all.
 */
function compileOrBreak(session: Session, source: string): number | BrokenExpression {
  try {
    return session.number('fn', source);
  } catch (error) {
    const f = toFailure(error, 'EXPRESSION_FAILED');
    if (f.fatal) throw f;
    return { errorType: f.errorType, message: f.message };
  }
}

/**
 * The wait between two attempts of a retry: `delay`, cut at the deadline around the node, where it wakes
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
