import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten-core';
import { PipelineFailure } from './errors.js';
import { baseSource, EXTENSIONS, type Extension, programExtension } from './guest.js';
import { captureImage } from './memory-image.js';
import type { SandboxModule } from './pool.js';
import { GUARD, REQUEST } from '../pipeline/protocol.js';

/** Host functions the guest may call through its bridged `Client` (src/functions/bridge.ts answers them). */
export type BridgeHandler = (op: string, args: unknown[]) => Promise<unknown>;

export interface SessionOptions {
  module: SandboxModule;
  /** Absolute time (of `now()`) after which the run is killed. */
  runDeadline: number;
  /** Bytes QuickJS may allocate (kept below the module's hard wasm cap). */
  memoryBytes: number;
  /** QuickJS stack limit, bytes (default 128 KB: deep guest recursion fails cleanly before the host's stack). */
  stackBytes?: number;
  now?: () => number;
  signal?: AbortSignal;
  bridge?: BridgeHandler;
  /** `console.*` inside the guest. */
  onConsole?: (level: string, message: string) => void;
  /** JSON text of the run's initial context object (default `{}`). */
  context?: string;
  /** Expression sources compiled into guest functions at open, index by index (see `badExpressions`). */
  expressions?: string[];
  /** The run's program (src/pipeline/inline.ts), installed when the session opens, before anything else runs. */
  program?: string;
  /**
   * The program's `GH(id, fn)` (a node with `retry` or `continueOnError`, src/pipeline/inline.ts): the host runs
   * `fn` through `attempt` as often as it decides and returns a number to the guest, or throws to fail the node
   * upwards. `attempt` gives the failure of one call (undefined when it returned), with the deadline moved back
   * to where it was and a node timeout's interrupt cleared.
   */
  guard?: (id: number, attempt: () => PipelineFailure | undefined) => number;
  /**
   * The program's `GH(id, error, ms, attempt)` (such a node whose attempts the guest runs, `WC`): an attempt that
   * took `ms` failed with `failure` (undefined: the node succeeded after retries). 2: try again; 0: give up and go
   * on; or throws to fail the node upwards.
   */
  caught?: (id: number, failure: PipelineFailure | undefined, ms: number, attempt: number) => number;
  /**
   * The program's `HQ(builtin, id, settings)` (the async program's host built-in, src/pipeline/protocol.ts): runs
   * node `id`'s built-in with the settings' JSON text and resolves with its result's JSON text ('' for none), or
   * rejects with the node's failure. The session bounds the wait by its deadline in force (the signal is then
   * aborted and the guest's promise rejected with a timeout) and refuses the request outside `settleProgram`.
   */
  builtin?: (id: number, settings: string, signal: AbortSignal) => Promise<string>;
  /**
   * The program's `HQ(sleep, id, attempt)`: the wait of node `id`'s retry after `attempt` failed (the runner
   * computes and bounds it); rejects with the failure that ends the node (the run's time, a cancel).
   */
  sleep?: (id: number, attempt: number) => Promise<void>;
  /**
   * The program's `HQ(code, id, iteration)`: runs node `id`'s user code (a nested `settle` of the
   * `call` helper, or the page's function), bounded by the deadline in force; resolves with the answer's JSON text
   * (src/pipeline/protocol.ts) or rejects with the node's failure. While it runs, the program's settle does not
   * run guest jobs itself (the nested settle does), and no other user-code request is accepted.
   */
  code?: (id: number, iteration: number, signal: AbortSignal) => Promise<string>;
}

type Arg = string | number;

/** Names of the guest helpers of guest.ts. */
export type Helper =
  | 'finish'
  | 'describe'
  | 'fn'
  | 'put'
  | 'settings'
  | 'absorb'
  | 'script'
  | 'custom'
  | 'call'
  | 'run'
  | 'go'
  | 'context'
  | 'current'
  | 'adopt';

/** The extension of guest.ts that defines a helper (installed the first time the helper is called). */
const EXTENSION_OF: Partial<Record<Helper, Extension>> = {
  fn: 'host',
  put: 'host',
  settings: 'host',
  absorb: 'host',
  script: 'code',
  custom: 'code',
  call: 'code',
  context: 'page',
  current: 'page',
  adopt: 'page',
};

export interface Session {
  /** Calls a helper and returns its number result. */
  number(name: Helper, ...args: Arg[]): number;
  /** Calls a helper and returns its string result. */
  string(name: Helper, ...args: Arg[]): string;
  /** Calls a helper and ignores its result. */
  void(name: Helper, ...args: Arg[]): void;
  /** Calls a helper that returns a guest promise and waits (pumping jobs and host calls) until it settles. */
  settle(name: Helper, ...args: Arg[]): Promise<void>;
  /**
   * The same for the program when it is async (`go`): only the run's deadline bounds the host's waiting and
   * job pumping; node deadlines are the program's own (interrupts, which an async function turns into a
   * rejection, host built-ins bounded by the deadline in force, and `HQ(time)` checks). Host built-in requests
   * are accepted only meanwhile.
   */
  settleProgram(name: Helper, ...args: Arg[]): Promise<void>;
  /** Installs the user-code helpers and the guest's bridged `Client` and `console` (once; otherwise done on their first call). */
  installCode(): void;
  /**
   * Installs the run's compiled program: the source of a function of `(api, _)` that adds
   * the `run` and `go` helpers (src/pipeline/inline.ts). A later one replaces them (a run with an expression that
   * does not compile installs its program again, planned with the compiler's errors).
   */
  installProgram(source: string): void;
  /** Moves the deadline of what runs next (a node's own timeout), never past the run's deadline. */
  setDeadline(deadline: number): void;
  /**
   * Runs `fn` (the engine's own guest helpers) with a short deadline of its own, `ms` from now, even after
   * the run's deadline passed or an interrupt: used to collect a failed segment's trace. After a cancel at most
   * 20 ms. `onTime`: a read on the way of a run that goes on (not a failure's), which never goes past the deadline
   * in force when that is still ahead (the node's time is up then: TIMEOUT).
   */
  grace<T>(ms: number, fn: () => T, onTime?: boolean): T;
  /** Host calls still in flight. */
  pendingHostCalls(): number;
  /** The deadline in force (the run's, a node's, or one the program moved). */
  readonly deadline: number;
  /** Indexes of `options.expressions` that did not compile (their guest function slot is empty). */
  readonly badExpressions: number[];
  /** Ends the session: in-flight host calls are dropped, later calls refused, the runtime disposed. */
  close(): void;
  readonly closed: boolean;
}

const DEFAULT_STACK = 128 * 1024;
/** Job batches the async program's settle runs before it lets the host's own tasks in (see `settleWith`). */
const PROGRAM_BATCHES = 16;
const JOB_BATCH = 256;
const MAX_ERROR_TEXT = 2000;
/** At most this long, ms, the engine reads a cancelled run's report (`grace`): what the guest recorded, not new work. */
const CANCEL_GRACE_MS = 20;

/** Opens a fresh runtime and context on `module` with the run's limits and the guest helpers installed. */
export function openSession(options: SessionOptions): Session {
  const { module } = options;
  const now = options.now ?? (() => performance.now());
  let deadline = options.runDeadline;
  let interrupted = false;
  let closed = false;
  const installed = new Set<string>();
  let api: QuickJSHandle | undefined;
  let internals: QuickJSHandle | undefined;
  const numbers = new Map<number, QuickJSHandle>();
  let disposed = false;
  let runtime: QuickJSRuntime | undefined;
  let ctx!: QuickJSContext;
  const helpers = new Map<Helper, QuickJSHandle>();
  const pending = new Map<number, QuickJSDeferredPromise>();
  let seq = 0;
  let wakers: (() => void)[] = [];
  const owned: QuickJSHandle[] = [];
  let badExpressions: number[] = [];
  /** Deadlines saved by the program's node timeouts (`DLH` in guest.ts), innermost last. */
  const stack: number[] = [];
  /** The guest never pops the stack below this (the entries of the guarded attempt running, see `gh`). */
  let floor = 0;
  /**
   * Polls of the interrupt handler to let pass although a node's deadline passed (never the run's): one after a
   * host built-in settles and after a guard hears of a failed attempt, so the program reaches its own handling
   * (the guard's catch, the next node's time check) instead of being interrupted a few operations before it.
   */
  let grace = 0;
  /** Whether an async program is running (`settleProgram`): host built-in requests are refused otherwise. */
  let programRunning = false;
  /**
   * Whether user code a program asked for (`HQ(code)`) is running under its nested settle: the program's settle then
   * leaves the guest's jobs to it, so the code's interrupts and failures are the node's.
   */
  let codeRunning = false;
  /** The id of that request (in `pending` while the code runs): not a host call the code awaits. */
  let codeRequest = 0;
  /** Failures the host gave the guest as thrown values (a rejected host built-in, a time check), known by identity. */
  const marked: { handle: QuickJSHandle; failure: PipelineFailure }[] = [];
  /** How to drop an in-flight host built-in call (its timer, its abort listener, its signal). */
  const cancels = new Map<number, () => void>();

  /** Inside `grace` (the engine collecting a failed segment's report) a cancelled run's helpers still run. */
  let gracing = false;
  const aborted = () => !gracing && options.signal?.aborted === true;
  const wake = () => {
    const list = wakers;
    wakers = [];
    for (const fn of list) fn();
  };

  const crash = (error: unknown): PipelineFailure => {
    module.broken = true;
    if (error instanceof PipelineFailure) return error;
    if (error instanceof RangeError) return new PipelineFailure('STACK_OVERFLOW', 'RangeError', 'Maximum call stack size exceeded (nesting too deep)', true);
    const message = String((error as Error)?.message ?? error);
    if (/out of memory|Cannot enlarge memory|memory access out of bounds/i.test(message) || atMemoryCap())
      return new PipelineFailure('OUT_OF_MEMORY', 'OutOfMemoryError', `The run used more than the memory limit (${mb(module.maxBytes)} MB)`, true);
    return new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'The sandbox stopped unexpectedly', true);
  };
  /** The heap grew to (nearly) QuickJS's allocation limit: an error without a description is then an out-of-memory. */
  const atMemoryCap = () => module.memory.buffer.byteLength >= Math.min(module.maxBytes, options.memoryBytes) * 0.85;

  const timeoutError = (): PipelineFailure => {
    if (aborted()) return new PipelineFailure('ABORTED', 'AbortError', 'The run was cancelled', true);
    const runLevel = now() >= options.runDeadline - 0.5;
    return new PipelineFailure('TIMEOUT', 'TimeoutError', runLevel ? 'The run exceeded its time limit' : 'The function exceeded its timeout', runLevel);
  };

  /** Turns a guest exception (consumed) into a PipelineFailure. */
  const guestError = (errorHandle: QuickJSHandle): PipelineFailure => {
    const known = marked.findIndex((m) => ctx.sameValue(m.handle, errorHandle));
    if (known >= 0) {
      const [m] = marked.splice(known, 1);
      m!.handle.dispose();
      errorHandle.dispose();
      return m!.failure;
    }
    let described = '';
    if (!interrupted) {
      try {
        const describe = describer();
        const r = describe && ctx.callFunction(describe, ctx.undefined, errorHandle);
        if (r?.error) r.error.dispose();
        else if (r) {
          described = ctx.getString(r.value);
          r.value.dispose();
        }
      } catch (error) {
        errorHandle.dispose();
        return crash(error);
      }
    }
    errorHandle.dispose();
    if (interrupted || (aborted() && !described)) return timeoutError();
    let name = 'Error';
    let message = '';
    let expression: string | undefined;
    try {
      const parsed = JSON.parse(described) as { n: string; m: string; x?: unknown };
      name = typeof parsed.n === 'string' && /^[A-Za-z_$][\w$]{0,60}$/.test(parsed.n) ? parsed.n : 'Error';
      message = parsed.m.slice(0, MAX_ERROR_TEXT);
      // The expression that was running (guest.ts names each `$$e<index>`), appended once the checks below are done.
      if (typeof parsed.x === 'string') expression = parsed.x.trim().slice(0, 500);
    } catch {
      /* not described */
    }
    if (/^out of memory$/i.test(message) || (!message && atMemoryCap())) {
      module.broken = true;
      return new PipelineFailure('OUT_OF_MEMORY', 'OutOfMemoryError', `The run used more than the memory limit (${mb(module.maxBytes)} MB)`, true);
    }
    if (!described) return new PipelineFailure('GUEST_ERROR', 'Error', 'An error without a description was thrown', false);
    if (name === 'InternalError' && /stack overflow/i.test(message))
      return new PipelineFailure('STACK_OVERFLOW', 'RangeError', 'Maximum call stack size exceeded (recursion too deep)', false);
    return new PipelineFailure('GUEST_ERROR', name, expression === undefined ? message : `${message} (expression: ${expression})`, false);
  };

  /** The guest's `describe` helper, installed on the first error (undefined when that fails, e.g. out of memory). */
  let describing = false;
  const describer = (): QuickJSHandle | undefined => {
    let fn = helpers.get('describe');
    if (fn) return fn;
    if (!installed.has('errors')) {
      if (describing) return undefined;
      describing = true;
      const saved = deadline;
      deadline = Math.max(deadline, now() + 50);
      try {
        install('errors', EXTENSIONS.errors);
      } catch {
        return undefined;
      } finally {
        describing = false;
        deadline = saved;
      }
    }
    fn = ctx.getProp(api!, 'describe');
    helpers.set('describe', fn);
    return fn;
  };

  const check = (until = deadline) => {
    if (closed) throw new PipelineFailure('ABORTED', 'AbortError', 'The run has ended', true);
    if (aborted() || now() > until) throw timeoutError();
  };

  /** A guest error standing for `failure`: the host reports the failure itself when the guest throws it back. */
  const mark = (failure: PipelineFailure): QuickJSHandle => {
    const handle = ctx.newError({ name: failure.errorType, message: failure.message });
    marked.push({ handle: handle.dup(), failure });
    return handle;
  };

  const invoke = (name: Helper, args: Arg[]): QuickJSHandle => {
    check();
    const extension = EXTENSION_OF[name];
    if (extension && !installed.has(extension)) install(extension, EXTENSIONS[extension]);
    const handles: QuickJSHandle[] = [];
    const argv: QuickJSHandle[] = [];
    try {
      let fn = helpers.get(name);
      if (!fn) {
        fn = ctx.getProp(api!, name);
        helpers.set(name, fn);
      }
      for (const a of args) {
        if (typeof a === 'number') {
          let h = numbers.get(a);
          if (!h) {
            h = ctx.newNumber(a);
            if (numbers.size < 512) numbers.set(a, h);
            else handles.push(h);
          }
          argv.push(h);
        } else {
          const h = ctx.newString(a);
          handles.push(h);
          argv.push(h);
        }
      }
      const r = ctx.callFunction(fn, ctx.undefined, ...argv);
      if (r.error) throw guestError(r.error);
      return r.value;
    } catch (error) {
      if (error instanceof PipelineFailure) throw error;
      throw crash(error);
    } finally {
      if (!module.broken) for (const h of handles) if (h.alive) h.dispose();
    }
  };

  /** Runs pending guest jobs (at most `batches` batches); returns whether some are left. */
  const drainJobs = (until = deadline, batches = Infinity): boolean => {
    for (let b = 0; runtime!.hasPendingJob(); b++) {
      if (b >= batches) return true;
      check(until);
      let r: ReturnType<NonNullable<typeof runtime>['executePendingJobs']>;
      try {
        r = runtime!.executePendingJobs(JOB_BATCH);
      } catch (error) {
        throw crash(error);
      }
      if (r.error) throw guestError(r.error);
      r.dispose();
    }
    return false;
  };

  const waitForHost = async (until = deadline) => {
    const remaining = until - now();
    if (aborted() || remaining <= 0) throw timeoutError();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, remaining + 1);
      const onAbort = () => done();
      options.signal?.addEventListener('abort', onAbort);
      function done() {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        resolve();
      }
      wakers.push(done);
    });
  };

  const newGuestError = (error: unknown): QuickJSHandle => {
    const e = error as { name?: unknown; message?: unknown; code?: unknown; status?: unknown };
    const name = typeof e?.name === 'string' && /^[A-Za-z]{1,60}$/.test(e.name) ? e.name : 'Error';
    const message = String(e?.message ?? error).slice(0, MAX_ERROR_TEXT);
    const handle = ctx.newError({ name, message });
    if (typeof e?.code === 'string') ctx.newString(e.code.slice(0, 100)).consume((h) => ctx.setProp(handle, 'code', h));
    if (typeof e?.status === 'number') ctx.newNumber(e.status).consume((h) => ctx.setProp(handle, 'status', h));
    return handle;
  };

  const settleHostCall = (id: number, ok: boolean, value: unknown) => {
    const deferred = pending.get(id);
    if (closed || !deferred) return;
    pending.delete(id);
    try {
      if (ok) {
        const json = value === undefined ? undefined : JSON.stringify(value);
        if (json === undefined) deferred.resolve(ctx.undefined);
        else ctx.newString(json).consume((h) => deferred.resolve(h));
      } else {
        const h = newGuestError(value);
        deferred.reject(h);
        h.dispose();
      }
    } catch (error) {
      // The guest could not take the value (out of memory): the awaiting code never resumes and the run times out or fails.
      if (error instanceof WebAssembly.RuntimeError) module.broken = true;
    } finally {
      if (deferred.alive) deferred.dispose();
      wake();
    }
  };

  let spare: Spare | undefined;
  try {
    // A sandbox prepared while the thread was idle (never used: nothing has run in it), else a new one.
    settleModule(module);
    spare = module.spare ?? prepareSpare(module);
    module.spare = undefined;
    const prime: Prime = { program: options.program ?? '', expressions: JSON.stringify(options.expressions ?? []) };
    // The module's last run was of this definition and left no primed sandbox (runs back to back, no idle moment
    // between them): primed now and saved as an image, so that the next ones are put back from it.
    if (module.layout && samePrime(module.prime, prime) && !samePrime(module.unprimable, prime) && !primedFor(spare, prime))
      spare = primeNow(module, spare, prime);
    runtime = spare.runtime;
    ctx = spare.ctx;
    // Disposed with the session (the factory after the host functions: `install` passes owned[0..4] to extensions).
    owned.push(...spare.fns, spare.factory);
    runtime.setMemoryLimit(options.memoryBytes);
    runtime.setMaxStackSize(options.stackBytes ?? DEFAULT_STACK);
    const bound = spare.bound;
    bound.interrupt = () => {
      if (!interrupted && (aborted() || now() > deadline)) {
        if (grace > 0 && !aborted() && now() <= options.runDeadline) grace--;
        else interrupted = true;
      }
      return interrupted;
    };
    bound.host = (opH, argsH) => {
      if (closed) return { error: newGuestError(new Error('The run has ended: no more host calls are accepted')) };
      let op: string;
      let args: unknown[];
      try {
        op = ctx.getString(opH);
        args = JSON.parse(ctx.getString(argsH)) as unknown[];
        if (!Array.isArray(args)) throw new Error('bad arguments');
      } catch {
        return { error: newGuestError(new TypeError('Invalid host call')) };
      }
      if (!options.bridge) return { error: newGuestError(new Error(`${op} is not available here`)) };
      const id = ++seq;
      const deferred = ctx.newPromise();
      pending.set(id, deferred);
      const bridge = options.bridge;
      Promise.resolve()
        .then(() => bridge(op, args))
        .then(
          (value) => settleHostCall(id, true, value),
          (error: unknown) => settleHostCall(id, false, error),
        );
      return deferred.handle;
    };
    // The program's host requests (src/pipeline/protocol.ts REQUEST): nothing in them is trusted. A built-in runs
    // only for a node the runner compiled as one (`options.builtin` checks the id), only while an async program
    // runs, and its wait is bounded by the host's deadline in force, whatever the guest's clock says.
    bound.hq = (requestH, idH, textH) => {
      if (closed) return { error: newGuestError(new Error('The run has ended: no more host calls are accepted')) };
      // Arguments the guest left out arrive as no handle at all.
      const typeOf = (h: QuickJSHandle | undefined) => (h ? ctx.typeof(h) : 'undefined');
      const request = typeOf(requestH) === 'number' ? ctx.getNumber(requestH!) : -1;
      if (request === REQUEST.time) return aborted() || now() > deadline ? { error: mark(timeoutError()) } : undefined;
      // A built-in's wait is bounded here by the deadline in force; a retry's sleep by the runner (it is never a
      // failure); user code by its own nested settle (or, in page mode, the runner), under the deadline in force.
      const bounded = request === REQUEST.builtin;
      const isCode = request === REQUEST.code;
      const serve = bounded ? options.builtin : request === REQUEST.sleep ? options.sleep : isCode ? options.code : undefined;
      if (!serve || !programRunning || (isCode && codeRunning) || typeOf(idH) !== 'number' || typeOf(textH) !== (bounded ? 'string' : 'number'))
        return { error: newGuestError(new TypeError('Invalid host request')) };
      const node = ctx.getNumber(idH!);
      const arg = bounded ? ctx.getString(textH!) : ctx.getNumber(textH!);
      if (isCode) {
        codeRunning = true;
        grace = 0;
      }
      const id = ++seq;
      if (isCode) codeRequest = id;
      const deferred = ctx.newPromise();
      pending.set(id, deferred);
      const controller = new AbortController();
      const stop = () => clearTimeout(timer);
      const answer = (ok: boolean, value: string | PipelineFailure) => {
        stop();
        cancels.delete(id);
        if (isCode) codeRunning = false;
        if (closed || pending.get(id) !== deferred) return;
        pending.delete(id);
        try {
          if (!ok) {
            const h = mark(value as PipelineFailure);
            deferred.reject(h);
            h.dispose();
          } else if (value === '') deferred.resolve(ctx.undefined);
          else ctx.newString(value as string).consume((h) => deferred.resolve(h));
        } catch (error) {
          // The guest could not take the value (out of memory): the awaiting code never resumes and the run fails.
          if (error instanceof WebAssembly.RuntimeError) module.broken = true;
        } finally {
          if (deferred.alive) deferred.dispose();
          // The program resumes to handle the answer; a node deadline that passed meanwhile is its to report.
          interrupted = aborted() || now() > options.runDeadline;
          grace = 1;
          wake();
        }
      };
      function expire() {
        controller.abort();
        answer(false, timeoutError());
      }
      // At the run's own deadline (or a cancel) the program's settle fails the run and drops this call (cancel).
      const timer = bounded && deadline < options.runDeadline ? setTimeout(expire, Math.max(0, deadline - now()) + 1) : undefined;
      cancels.set(id, () => {
        stop();
        controller.abort();
        // A nested settle waiting for the host hears of it at once.
        if (isCode) wake();
      });
      Promise.resolve()
        .then(() => (serve as (node: number, arg: string | number, signal: AbortSignal) => Promise<string | undefined>)(node, arg, controller.signal))
        .then(
          (value) => answer(true, typeof value === 'string' ? value : ''),
          (error: unknown) => answer(false, error instanceof PipelineFailure ? error : new PipelineFailure('FUNCTION_FAILED', 'FunctionError', String(error))),
        );
      return deferred.handle;
    };
    bound.note = (levelH, textH) => {
      if (closed) return;
      options.onConsole?.(ctx.getString(levelH), ctx.getString(textH).slice(0, MAX_ERROR_TEXT));
    };
    // A compiled node `timeout` (src/pipeline/inline.ts): dl(ms) enters a node with its own deadline, never
    // past the current one; dl(-1) leaves it. A failure skips the leaving: the host's next setDeadline resets.
    // The guest's calls are trusted for nothing: a deadline only ever moves earlier, or back to one saved above the
    // floor, and never past the run's.
    bound.dl = (msH) => {
      const ms = ctx.getNumber(msH);
      if (ms >= 0) {
        stack.push(deadline);
        if (Number.isFinite(ms)) deadline = Math.min(deadline, now() + ms);
      } else if (ms === -1 && stack.length > floor) deadline = Math.min(stack.pop()!, options.runDeadline);
    };
    // The program's guard (inline.ts W/WC): mode 0 runs fnH attempt by attempt (the host decides); 1: an attempt
    // the guest ran threw xH; 2: the node succeeded after retries. The mode is the program's, never a user value.
    bound.gh = (idH, modeH, xH, msH, attemptH, popsH) => {
      const id = ctx.getNumber(idH);
      const mode = ctx.getNumber(modeH);
      if (mode !== GUARD.run) {
        try {
          if (!options.caught) throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'No guard for this program', true);
          const failure = mode === GUARD.succeeded ? undefined : guestError(xH!.dup());
          if (mode === GUARD.failed && popsH && ctx.typeof(popsH) === 'number') {
            // An async attempt (WA) failed past its node timeouts: the deadlines they moved are left (as many as the
            // guest's DQ calls would, never below the floor), so the guard decides under the node's own deadline.
            const pops = ctx.getNumber(popsH);
            for (let k = 0; k < pops && stack.length > floor; k++) deadline = Math.min(stack.pop()!, options.runDeadline);
            interrupted = aborted() || now() > deadline;
            grace = 1;
          }
          return ctx.newNumber(options.caught(id, failure, ctx.getNumber(msH!), ctx.getNumber(attemptH!)));
        } catch (error) {
          return { error: newGuestError(error) };
        }
      }
      const attempt = (): PipelineFailure | undefined => {
        const depth = stack.length;
        const entry = deadline;
        const outer = floor;
        floor = depth;
        let failure: PipelineFailure | undefined;
        try {
          const r = ctx.callFunction(xH!, ctx.undefined);
          if (r.error) failure = guestError(r.error);
          else r.value.dispose();
        } catch (error) {
          failure = error instanceof PipelineFailure ? error : crash(error);
        } finally {
          floor = outer;
        }
        if (!failure?.fatal) {
          // Whatever the attempt left on the stack (a failure skips its leaving calls) is dropped.
          if (stack.length > depth) stack.length = depth;
          deadline = entry;
          interrupted = aborted() || now() > deadline;
        }
        return failure;
      };
      try {
        if (!options.guard) throw new PipelineFailure('SANDBOX_CRASHED', 'InternalError', 'No guard for this program', true);
        return ctx.newNumber(options.guard(id, attempt));
      } catch (error) {
        return { error: newGuestError(error) };
      }
    };
    module.prime = prime;
    const primed = spare.primed;
    spare.primed = undefined;
    if (primed && primedFor({ primed }, prime)) {
      // Primed while idle with this very program and expressions (src/sandbox/session.ts primeSpare): only the
      // run's context is still to add.
      api = primed.api;
      internals = primed.internals;
      badExpressions = primed.bad;
      installed.add('base-program');
      if (options.context && options.context !== '{}') {
        const init = ctx.newString(options.context);
        const done = ctx.getProp(api, 'init').consume((fn) => ctx.callFunction(fn, ctx.undefined, init));
        init.dispose();
        ctx.unwrapResult(done).dispose();
      }
    } else {
      if (primed) {
        // Primed for another definition: not this run's sandbox. Dropped, and a plain one made.
        disposeSpare({ ...spare, primed });
        owned.length = 0;
        spare = prepareSpare(module);
        runtime = spare.runtime;
        ctx = spare.ctx;
        owned.push(...spare.fns, spare.factory);
        runtime.setMemoryLimit(options.memoryBytes);
        runtime.setMaxStackSize(options.stackBytes ?? DEFAULT_STACK);
        Object.assign(spare.bound, bound);
      }
      const opened = callFactory(spare, options.context ?? '{}', prime.expressions);
      api = opened.api;
      internals = opened.internals;
      badExpressions = opened.bad;
      // The program, installed before anything of the run has executed (as if it were part of the base script).
      if (options.program) install('base-program', programExtension(options.program));
    }
  } catch (error) {
    if (interrupted) {
      closeSession();
      throw timeoutError();
    }
    const failure = crash(error);
    closeSession();
    throw failure;
  }

  function install(key: string, source: string) {
    if (installed.has(key)) return;
    check();
    let factory: QuickJSHandle | undefined;
    try {
      const compiled = ctx.evalCode(source, `${key}.js`);
      if (compiled.error) throw guestError(compiled.error);
      factory = compiled.value;
      const r = ctx.callFunction(factory, ctx.undefined, api!, internals!, owned[0]!, owned[1]!, owned[2]!, owned[3]!, owned[4]!);
      if (r.error) throw guestError(r.error);
      r.value.dispose();
      installed.add(key);
    } catch (error) {
      if (error instanceof PipelineFailure) throw error;
      // A trap of the wasm itself (not a guest error) leaves the module unusable, whatever the run reports.
      if (error instanceof WebAssembly.RuntimeError) module.broken = true;
      throw interrupted ? timeoutError() : crash(error);
    } finally {
      if (factory?.alive && !module.broken) factory.dispose();
    }
  }

  function closeSession() {
    if (closed) return;
    closed = true;
    for (const d of pending.values()) {
      try {
        d.dispose();
      } catch {
        /* already gone */
      }
    }
    pending.clear();
    for (const cancel of cancels.values()) cancel();
    cancels.clear();
    wake();
    disposed = true;
    const image = spare && module.image?.spare === spare ? module.image : undefined;
    if (image) module.image = undefined;
    // Never from inside the module's own call (a host function or the interrupt handler: none closes a session today).
    if (module.depth) module.broken = true;
    if (module.broken) return; // disposing a crashed runtime can abort: leave it to the garbage collector
    try {
      for (const m of marked.splice(0)) m.handle.dispose();
      for (const h of helpers.values()) h.dispose();
      for (const h of numbers.values()) h.dispose();
      // A module whose memory grew near the cap is dropped as before (memory never shrinks), image or not.
      if (image && spare && (options.stackBytes ?? DEFAULT_STACK) <= IMAGE_STACK_BYTES && !atMemoryCap()) {
        // The run's handles are gone; its runtime and context go back to the primed sandbox saved before it ran.
        image.memory.restore();
        imageRestores++;
        spare.primed = image.primed;
        Object.assign(spare.bound, UNBOUND);
        module.spare = spare;
        module.image = image;
        return;
      }
      for (const h of owned) h.dispose();
      internals?.dispose();
      api?.dispose();
      ctx?.dispose();
      runtime?.dispose();
    } catch {
      module.broken = true;
    }
    // A heap that came near the cap is not reused: the next run would start close to out-of-memory.
    if (atMemoryCap()) module.broken = true;
  }

  /** Whether a host call other than `request` (0: none) is still in flight. */
  function hostCallsBesides(request: number): boolean {
    return pending.size > (request > 0 && pending.has(request) ? 1 : 0);
  }

  /**
   * Calls a helper returning a guest promise and pumps jobs and host calls until it settles. `program`: an async
   * segment, bounded by the run's deadline only (see `settleProgram`).
   */
  async function settleWith(program: boolean, name: Helper, args: Arg[]): Promise<void> {
    const firstCall = seq + 1;
    const promise = invoke(name, args);
    const until = () => (program ? options.runDeadline : deadline);
    // A program waits for many host answers under one fixed deadline (the run's): one timer and one abort listener
    // for all of them, where a node's settle sets them per wait.
    // A timer may fire early by the time the event loop spent before it was set (its clock is read once per turn,
    // and the guest may have run long in this one): one that rang before the deadline is set again before the next
    // wait, else nothing would wake the program when its host calls never answer.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ring = () => {
      // Also when the abort listener rings: the pending run-deadline timer goes (it would keep the process alive).
      clearTimeout(timer);
      timer = undefined;
      wake();
    };
    const arm = () => {
      timer = setTimeout(ring, Math.max(0, options.runDeadline - now()) + 1);
    };
    if (program) {
      arm();
      options.signal?.addEventListener('abort', ring);
    }
    try {
      for (;;) {
        if (program) check(until());
        // A program drains in slices: promise jobs an expression started (even an endless chain of them) share the
        // guest with it, and host answers get in between.
        // While user code the program awaits runs, its nested settle runs the jobs (bounded by the node's deadline).
        const more = program && codeRunning ? false : drainJobs(until(), program ? PROGRAM_BATCHES : Infinity);
        const state = ctx.getPromiseState(promise);
        if (state.type === 'fulfilled') {
          if (state.value !== promise && state.value.alive) state.value.dispose();
          return;
        }
        if (state.type === 'rejected') throw guestError(state.error);
        if (more) {
          await new Promise<void>((resolve) => setTimeout(resolve, 0));
          continue;
        }
        // The program's request that awaits this settle (user code under a nested settle) is no host call the code
        // awaits: it must not hide a promise of that code that can never settle. Any other call counts, also one an
        // earlier node started (its promise may be awaited here).
        if (!hostCallsBesides(program ? 0 : codeRequest))
          throw new PipelineFailure('NEVER_SETTLES', 'PipelineError', 'The function awaits a promise that can never settle', false);
        if (program) {
          if (timer === undefined) arm();
          await new Promise<void>((resolve) => wakers.push(resolve));
        } else await waitForHost(until());
        if (closed) throw new PipelineFailure('ABORTED', 'AbortError', 'The run has ended', true);
      }
    } catch (error) {
      // The node is over (timed out or failed): host calls it started and still awaits are dropped, so their
      // answers never resume its code later, inside another node (after continueOnError) or beside a retry.
      for (const [id, deferred] of pending)
        if (id >= firstCall) {
          pending.delete(id);
          cancels.get(id)?.();
          cancels.delete(id);
          try {
            if (deferred.alive) deferred.dispose();
          } catch {
            /* already gone */
          }
        }
      // A program that failed while its user code ran (the run's time, a cancel): that request was dropped above.
      if (program && codeRunning && !pending.has(codeRequest)) codeRunning = false;
      if (error instanceof PipelineFailure) throw error;
      throw crash(error);
    } finally {
      clearTimeout(timer);
      if (program) options.signal?.removeEventListener('abort', ring);
      if (promise.alive && !disposed && !module.broken) promise.dispose();
    }
  }

  return {
    number: (name, ...args) => {
      const h = invoke(name, args);
      try {
        return ctx.getNumber(h);
      } finally {
        h.dispose();
      }
    },
    string: (name, ...args) => {
      const h = invoke(name, args);
      try {
        return ctx.getString(h);
      } finally {
        h.dispose();
      }
    },
    void: (name, ...args) => invoke(name, args).dispose(),
    settle: (name, ...args) => settleWith(false, name, args),
    async settleProgram(name, ...args) {
      programRunning = true;
      try {
        await settleWith(true, name, args);
      } finally {
        programRunning = false;
      }
    },
    installCode: () => install('code', EXTENSIONS.code),
    installProgram: (source) => install('program', source),
    setDeadline(next) {
      grace = 0;
      stack.length = 0;
      floor = 0;
      deadline = Math.min(next, options.runDeadline);
      if (now() <= deadline) interrupted = false;
    },
    grace(ms, fn, onTime = false) {
      const saved = deadline;
      const wasInterrupted = interrupted;
      const wasGracing = gracing;
      const at = now();
      // A failure's report gets its grace whatever the deadline (a descheduled process must not lose the trace); a
      // read on the way of a run that goes on is on the node's time while that lasts; after a cancel, briefly.
      const bound = options.signal?.aborted ? Math.min(ms, CANCEL_GRACE_MS) : ms;
      deadline = onTime && !wasInterrupted && saved > at ? Math.min(saved, at + bound) : at + bound;
      interrupted = false;
      gracing = true;
      try {
        return fn();
      } finally {
        gracing = wasGracing;
        deadline = saved;
        interrupted = wasInterrupted || now() > saved;
      }
    },
    pendingHostCalls: () => pending.size,
    get deadline() {
      return deadline;
    },
    badExpressions,
    close: closeSession,
    get closed() {
      return closed;
    },
  };
}

const mb = (bytes: number) => Math.round(bytes / 1048576);

type Fn = (...args: QuickJSHandle[]) => unknown;

/** What the host functions and the interrupt handler of a spare call: set by the session that takes it. */
interface Bound {
  interrupt: () => boolean;
  host: Fn;
  note: Fn;
  dl: Fn;
  gh: Fn;
  hq: Fn;
}

/**
 * A fresh runtime and context with the engine's host functions (`host`, `note`, `dl`, `gh`, `hq`, calling whatever the
 * session that takes it binds) and the base script compiled (`factory`, not called): no guest code has run in it.
 * Prepared while the thread is idle (`closeWhenIdle`) or when a session opens without one.
 */
export interface Spare {
  runtime: QuickJSRuntime;
  ctx: QuickJSContext;
  fns: [QuickJSHandle, QuickJSHandle, QuickJSHandle, QuickJSHandle, QuickJSHandle];
  factory: QuickJSHandle;
  bound: Bound;
  /** Primed for a definition (`primeSpare`): the factory was called for it, its program installed. */
  primed?: Prime & { api: QuickJSHandle; internals: QuickJSHandle; bad: number[] };
}

const unbound = () => {
  throw new Error('The sandbox is not bound to a run');
};

/** A run's stack, at most, for its sandbox to be put back from a memory image (memory-image.ts `STACK_ROOM`). */
const IMAGE_STACK_BYTES = 512 * 1024;

const UNBOUND: Bound = { interrupt: () => false, host: unbound, note: unbound, dl: unbound, gh: unbound, hq: unbound };

export function prepareSpare(module: SandboxModule): Spare {
  // A new runtime in the module: its memory is no longer the image's.
  module.image = undefined;
  const runtime = module.quickjs.newRuntime();
  try {
    runtime.setMemoryLimit(Math.max(16 * 1024 * 1024, module.maxBytes - 8 * 1024 * 1024));
    // As a run's (priming compiles expressions: a deeply nested one fails as it would in the run).
    runtime.setMaxStackSize(DEFAULT_STACK);
    const bound: Bound = { ...UNBOUND };
    // Counted while they run (the module's wasm is on the stack then): no image is saved or put back meanwhile.
    const inside = <T>(fn: () => T): T => {
      module.depth = (module.depth ?? 0) + 1;
      try {
        return fn();
      } finally {
        module.depth--;
      }
    };
    runtime.setInterruptHandler(() => inside(() => bound.interrupt()));
    const ctx = runtime.newContext();
    const fns = (['host', 'note', 'dl', 'gh', 'hq'] as const).map((name) =>
      ctx.newFunction(name, (...args: QuickJSHandle[]) => inside(() => (bound[name] as Fn)(...args)) as never),
    ) as Spare['fns'];
    const factory = ctx.unwrapResult(ctx.evalCode(baseSource(), 'engine.js'));
    return { runtime, ctx, fns, factory, bound };
  } catch (error) {
    module.broken = true;
    throw error;
  }
}

/** What a spare is primed with: a run's program and the JSON of its expression sources. */
export interface Prime {
  program: string;
  expressions: string;
}

/** Calls a spare's base script: the helper object (`api`), its private state (`_`) and the expressions that did not compile. */
function callFactory(spare: Spare, context: string, expressions: string): { api: QuickJSHandle; internals: QuickJSHandle; bad: number[] } {
  const { ctx, fns, factory } = spare;
  const init = ctx.newString(context);
  const exprs = ctx.newString(expressions);
  const made = ctx.callFunction(factory, ctx.undefined, init, exprs, fns[2], fns[3], fns[4]);
  init.dispose();
  exprs.dispose();
  const api = ctx.unwrapResult(made);
  const internals = ctx.getProp(api, '_');
  const bad = ctx.getProp(api, 'bad').consume((h) => ctx.getString(h));
  return { api, internals, bad: bad === '' ? [] : bad.split(',').map(Number) };
}

/** How long priming may take (compiling a definition's expressions and program; only a malformed expression takes long). */
const PRIME_MS = 50;

/**
 * Primes a spare for the definition the module ran last (the same action is often run again): its expressions
 * compiled and its program installed, with an empty context, under a short deadline of its own. Only the engine's
 * code runs, plus what compiling those expressions runs, which a run of that definition runs when it opens anyway;
 * a session whose program and expressions differ drops it. Throws when priming fails.
 */
function primeSpare(spare: Spare, prime: Prime): void {
  const { ctx, fns } = spare;
  const until = performance.now() + PRIME_MS;
  spare.bound.interrupt = () => performance.now() > until;
  try {
    const opened = callFactory(spare, '{}', prime.expressions);
    spare.primed = { ...prime, ...opened };
    if (prime.program) {
      const factory = ctx.unwrapResult(ctx.evalCode(programExtension(prime.program), 'base-program.js'));
      const r = ctx.callFunction(factory, ctx.undefined, opened.api, opened.internals, ...fns);
      factory.dispose();
      ctx.unwrapResult(r).dispose();
    }
  } finally {
    spare.bound.interrupt = () => false;
  }
}

const samePrime = (a: Prime | undefined, b: Prime) => a !== undefined && a.program === b.program && a.expressions === b.expressions;
const primedFor = (spare: Pick<Spare, 'primed'>, prime: Prime) => samePrime(spare.primed, prime);

/**
 * A spare primed for `prime` and saved as the module's image, made from `spare` (dropped when primed for another
 * definition); a plain spare when priming or saving fails.
 */
function primeNow(module: SandboxModule, spare: Spare, prime: Prime): Spare {
  let next = spare;
  try {
    if (next.primed) {
      disposeSpare(next);
      next = prepareSpare(module);
    }
    primeSpare(next, prime);
    const memory = module.layout && !module.depth && next.primed && captureImage(module.memory, module.layout, next.runtime, next.ctx);
    if (memory && next.primed) module.image = { spare: next, primed: next.primed, memory };
    return next;
  } catch {
    // Not primable (e.g. an expression too long to compile in time): a plain spare, as the session would open anyway,
    // and no priming for this definition again on this module.
    module.unprimable = prime;
    try {
      disposeSpare(next);
    } catch (error) {
      module.broken = true;
      throw error;
    }
    return prepareSpare(module);
  }
}

/** Disposes a spare that no session took (or one primed for another definition). */
function disposeSpare(spare: Spare): void {
  const { primed } = spare;
  for (const h of [primed?.internals, primed?.api, ...spare.fns, spare.factory]) if (h?.alive) h.dispose();
  spare.ctx.dispose();
  spare.runtime.dispose();
}

/** Runs the close of the module's last session, if it is still to run (`closeWhenIdle`). */
export function settleModule(module: SandboxModule): void {
  const closing = module.closing;
  module.closing = undefined;
  closing?.();
}

const later: (fn: () => void) => void =
  typeof (globalThis as { setImmediate?: unknown }).setImmediate === 'function'
    ? (fn) => void (globalThis as unknown as { setImmediate: (f: () => void) => unknown }).setImmediate(fn)
    : (fn) => void setTimeout(fn, 0);

/** Modules whose last session is still to close, left for an idle moment (`closeWhenIdle`). */
const idleModules = new Set<SandboxModule>();

/**
 * Does the work left for an idle moment now. The engine's Worker calls it right after posting a run's outcome
 * (src/pipeline/worker-host.ts): in a worker thread a timer or an immediate often comes only after the next
 * message, the next run. Elsewhere it runs from an immediate (a timer in browsers) after the run.
 */
let imageRestores = 0;

/** How many sandboxes of this thread were put back from a memory image (diagnostics: run threads report it). */
export const restoredFromImages = (): number => imageRestores;

export function runIdleWork(): void {
  const modules = [...idleModules];
  idleModules.clear();
  for (const module of modules) tidy(module);
}

/**
 * Closes a finished run's session once the thread is idle (its answer goes out first), then prepares the module's
 * next sandbox (`Spare`). Whoever opens a session on the module before that closes it first (`settleModule`), so a
 * module never carries a run's state into another run.
 */
export function closeWhenIdle(module: SandboxModule, session: Session): void {
  if (module.broken || session.closed) {
    session.close();
    return;
  }
  module.closing = () => session.close();
  if (idleModules.size === 0) later(runIdleWork);
  idleModules.add(module);
}

/** The idle work of a module: its last session closed, and a spare prepared (primed when it can be) unless it is in use. */
function tidy(module: SandboxModule): void {
  // Nothing to close: a session opened on the module meanwhile (it is in use), or the module was retired.
  if (!module.closing) return;
  settleModule(module);
  if (module.broken || module.spare || module.inUse) return;
  let spare: Spare;
  try {
    spare = prepareSpare(module);
  } catch {
    return; // the module is marked broken; a run that gets it opens none
  }
  try {
    if (module.prime && !samePrime(module.unprimable, module.prime)) {
      primeSpare(spare, module.prime);
      // Saved as it is now: each run of this definition on the module then starts from these bytes.
      const memory = module.layout && !module.depth && spare.primed && captureImage(module.memory, module.layout, spare.runtime, spare.ctx);
      if (memory && spare.primed) module.image = { spare, primed: spare.primed, memory };
    }
  } catch {
    // Not primable (e.g. an expression that loops when compiled): a plain spare, and no priming for it again.
    if (module.prime) module.unprimable = module.prime;
    module.prime = undefined;
    try {
      disposeSpare(spare);
      spare = prepareSpare(module);
    } catch {
      module.broken = true;
      return;
    }
  }
  module.spare = spare;
}

/** Closes the module's last session and disposes its spare: nothing of the module stays alive in QuickJS. */
export function retireModule(module: SandboxModule): void {
  settleModule(module);
  module.image = undefined;
  const spare = module.spare;
  module.spare = undefined;
  if (!spare || module.broken) return;
  try {
    disposeSpare(spare);
  } catch {
    module.broken = true;
  }
}
