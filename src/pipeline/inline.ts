/**
 * The run's compiled program: the whole pipeline as one guest function, run in one call.
 *
 * Every node is compiled: function nodes (the built-ins `set`, `return`, `if` and `log`, host
 * built-ins such as `read-datasource`, and user code: script nodes and custom functions), `if`
 * nodes and `loop` nodes. An expression that does not compile makes its node fail where the run
 * reaches it (`X`, with the compiler's error: `BrokenExpression`).
 * `retry` and `continueOnError` compile to a guard (`W`, `WC`, `WA`; the host side is
 * runner.ts `guardNode`/`guardCaught`). A node `timeout`
 * is compiled: `DP(ms)` before the node and `DQ()` after it move the session's deadline
 * (`DLH`, src/sandbox/session.ts) when the node's ends first, so a timed loop is still one
 * guest call. The run's program (one guest source, installed once per run) is one guest
 * function (historically a *segment*: the names below keep the word), so a 10,000-item loop of
 * `if`/`set` costs one host↔guest call. A program that awaits the host (a host built-in, `HB`;
 * user code, `HU`; a retry that waits, `WA`) is an async function: its requests are `HQ` calls
 * of src/pipeline/protocol.ts.
 *
 * The generated code holds only numbers, fixed engine code and JSON string literals:
 * user expressions stay separate guest functions (compiled by the `fns` helper), so
 * a malformed expression cannot change the program's structure.
 *
 * The program records trace events (node id, iteration, outcome) while the trace has room
 * and counts the rest per node; the current node (`N`), the failing condition (`C`), an
 * engine failure (`FL`) and the index of every active loop (`K[id]`) are kept in the
 * program's variables, where the host reads them (`run(-1)`, its report) to trace a failure,
 * even after an interrupt.
 */
import { HOST_BUILTINS } from '../functions/builtins.js';
import { builtinName } from '../functions/catalog.js';
import { LIB, programExtension } from '../sandbox/guest.js';
import { TRACE_VALUE_JS } from './trace-values.js';
import { expressionOf, itemsExpression, settingsSpec, type Spec } from './templates.js';
import { ANSWER, EVENT, GUARD, REQUEST } from './protocol.js';
import type { FunctionNode, LoopNode, PipelineNode } from '../contract/pipeline.js';

/** Built-ins whose whole effect is computed from expressions inside the guest. */
const INLINE_BUILTINS = new Set(['set', 'return', 'if', 'log']);

export interface InlineNode {
  path: string;
  /** Function package, `if` or `loop` (as in trace entries). */
  pkg: string;
  kind: 'function' | 'if' | 'loop';
  /** Enclosing inline node id, -1 at the segment's top. */
  parent: number;
  /** Id of the innermost enclosing inline loop (its index is this node's iteration), -1 when none. */
  loop: number;
  /** Number of conditions of an `if` node. */
  conditions?: number;
  /**
   * A node with `retry` or `continueOnError`: run under the host's guard (`W` → `GH`, see runner.ts `guardNode`).
   * `wait`: a retry that waits between attempts (`WA` awaits the host's sleep, `HQ(sleep)`).
   */
  guard?: { attempts: number; continueOnError: boolean; wait?: { delayMs: number; exponential: boolean } };
  /** A host built-in (`read-datasource`…): the program awaits it as a host request (`HB` → `HQ`, protocol.ts). */
  builtin?: string;
  /**
   * User code (a script node or a custom function): the program awaits it as a host request (`HU` → `HQ(code)`,
   * protocol.ts), which the host runs (runner.ts `callCode`). `source`: a script node's code.
   */
  code?: { kind: 'script' | 'custom'; source?: string };
}

/**
 * An expression that does not compile: the failure (`EXPRESSION_FAILED`) of the node that uses it, when the run
 * reaches it (runner.ts `compileOrBreak` gives the type and message of the compiler's error).
 */
export interface BrokenExpression {
  errorType: string;
  message: string;
}

export interface Plan {
  /**
   * Guest statements adding the `run` and `go` helpers, written for the scope of the base script
   * (src/sandbox/guest.ts: `J`, `ctx`, `scope`, `fns`, `st`, `_`, `api`); empty for an empty pipeline.
   * `asExtension` turns them into a function of `(api, _)` to install into an open session.
   */
  source: string;
  nodes: InlineNode[];
  /** Whether the program awaits the host (a host built-in, user code, a retry that waits): an async function. */
  async: boolean;
}

/** The program as an extension of an open session (a function of `(api, _)`). */
export const asExtension = programExtension;

/**
 * Where the program checks the host's deadline in an async segment (before every node and loop iteration; after an await, time has passed without any guest code running to be interrupted). Replaced by
 * the check in async segments and by nothing in others; JSON literals never hold a raw U+0001. Inside a loop whose
 * body awaits nothing there is none (genLoop): only the check before the loop.
 */
const CHECK = '\u0001';
const CHECK_CODE = `if(NOW()>=HD-1)HQ(${REQUEST.time});`;

/** Every expression source of the pipeline (settings templates, conditions, loop items and bounds), once each. */
export function collectExpressions(functions: PipelineNode[]): string[] {
  const found = new Set<string>();
  const add = (e: string) => {
    found.add(e);
    return 0;
  };
  const walk = (list: PipelineNode[] | undefined) => {
    for (const node of list ?? []) {
      if (node.type === 'loop') {
        if (node.items !== undefined) add(itemsExpression(node.items));
        else for (const v of [node.range!.from, node.range!.to]) if (typeof v === 'string') add(expressionOf(v));
        walk(node.functions);
      } else if (node.type === 'if') {
        for (const c of node.conditions) {
          add(expressionOf(c.condition));
          walk(c.functions);
        }
        walk(node.elseFunctions);
      } else {
        settingsOf(node, add);
        walk(node.functions);
      }
    }
  };
  walk(functions);
  return [...found];
}

/** The settings spec of a function node. */
function settingsOf(node: FunctionNode, compile: (e: string) => number): Spec {
  return settingsSpec(node.settings, {
    compile,
    expressionKeys: ['condition'],
    literalKeys: builtinName(node.functionPackage) === 'script' ? ['code'] : [],
  });
}

/** JSON text as a JS string literal (U+2028/2029 escaped for older parsers). */
const lit = (value: unknown) =>
  JSON.stringify(value)
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

/**
 * Compiles the pipeline into the run's guest program (one segment: the whole node list).
 * `compiled(source)` is the guest index of a compiled expression, or how one that did not compile fails.
 */
export function planPipeline(
  functions: PipelineNode[],
  compiled: (source: string) => number | BrokenExpression,
  maxLoopIterations: number,
  traceValueBytes = 4096,
): Plan {
  const nodes: InlineNode[] = [];
  const loopVars: string[] = [];
  let usesLoops = false;
  /** Host built-in nodes generated so far (each an `await`): tells whether a node's code awaits. */
  let awaits = 0;

  const used = new Set<string>();
  const call = (helper: string, args: string) => {
    used.add(helper);
    return `${helper}(${args})`;
  };
  /**
   * An expression of node `id`, or the node's failure where it would run when the expression does not compile
   * (`X`, as the engine's own failures: its message is the one the failure reports).
   */
  const broken = (id: number, source: string, e: BrokenExpression, prefix = '') =>
    call('X', `${id},"EXPRESSION_FAILED",${lit(e.errorType)},${lit(`${prefix}Invalid expression ${JSON.stringify(source)}: ${e.message}`)}`);
  const expr = (id: number, source: string, prefix?: string) => {
    const i = compiled(source);
    return typeof i === 'number' ? call('x', String(i)) : broken(id, source, i, prefix);
  };
  /** A function node's settings; when one of their expressions does not compile, the first fails the node before any runs. */
  const settingsJs = (node: FunctionNode, id: number): string => {
    let first: [string, BrokenExpression] | undefined;
    const spec = settingsOf(node, (source) => {
      const i = compiled(source);
      if (typeof i === 'number') return i;
      first ??= [source, i];
      return -1;
    });
    return first ? broken(id, first[0], first[1]) : specJs(spec);
  };
  const specJs = (spec: Spec): string => {
    switch (spec.k) {
      case 'x':
        return call('x', String(spec.i));
      case 't':
        return `(""${spec.p.map((p) => (typeof p === 'number' ? `+${call('T', call('x', String(p)))}` : `+${lit(p)}`)).join('')})`;
      case 'o':
        // An object literal defines own properties in order, like defineProperty; only a
        // literal "__proto__" key would set the prototype instead, so that one is written computed.
        return `{${spec.n.map((k, i) => `${k === '__proto__' ? `[${lit(k)}]` : lit(k)}:${specJs(spec.v[i]!)}`).join(',')}}`;
      case 'a':
        return `[${spec.v.map(specJs).join(',')}]`;
      default:
        return spec.j !== undefined ? `J.parse(${lit(spec.j)})` : lit(spec.v ?? null);
    }
  };
  // A `timeout` compiles to DP(ms) … DQ() around the node; `retry` and `continueOnError` to W(id, fn), which the
  // host runs (GH) attempt by attempt, or WC/WA, which the guest runs; a retry that waits sleeps in WA (HQ(sleep)).
  const guardOf = (node: PipelineNode): InlineNode['guard'] => {
    // `retry` applies to function nodes only.
    const retry = node.type === undefined || node.type === 'function' ? node.retry : undefined;
    const attempts = retry ? Math.max(1, Math.floor(Number(retry.attempts) || 1)) : 1;
    if (!(attempts > 1 || node.continueOnError)) return undefined;
    const guard: NonNullable<InlineNode['guard']> = { attempts, continueOnError: node.continueOnError === true };
    if (attempts > 1 && Number(retry!.delayMs) > 0) guard.wait = { delayMs: Number(retry!.delayMs), exponential: retry!.backoff === 'exponential' };
    return guard;
  };
  /** Whether a node or one inside it has a `timeout` (its interrupt cannot be caught inside the guest). */
  const timedWithin = (node: PipelineNode): boolean =>
    node.timeout !== undefined ||
    (node.type === 'if'
      ? node.conditions.some((c) => (c.functions ?? []).some(timedWithin)) || (node.elseFunctions ?? []).some(timedWithin)
      : (node.functions ?? []).some(timedWithin));
  /**
   * A guarded node's call: WC (the guest catches; the host is called only when an attempt fails) unless a timeout
   * inside may interrupt it: then W (the host runs each attempt, and sees the interrupt).
   */
  const guardCall = (node: PipelineNode, id: number, fn: string) => {
    if (nodes[id]!.guard?.wait) {
      awaits++;
      return `await ${call('WA', `${id},async function(){${fn}},1`)}`;
    }
    return call(timedWithin(node) ? 'W' : 'WC', `${id},function(){${fn}}`);
  };
  /**
   * An if or loop node's code (which starts with `N=<id>;`) under the host's guard, if it has one. One that awaits
   * the host (a built-in, user code, a retry that waits inside it) runs its attempt as an async function under `WA`
   * (an interrupt inside it is a rejection WA catches, as for an awaiting function node); `retry` does not apply
   * to if and loop nodes, so it never waits between attempts.
   */
  const guarded = (node: PipelineNode, id: number, code: string, awaited: boolean) => {
    if (!nodes[id]!.guard) return code;
    if (awaited) return `N=${id};await ${call('WA', `${id},async function(){${code}},0`)};`;
    return `N=${id};${guardCall(node, id, code)};`;
  };
  const enter = (node: PipelineNode) => (node.timeout === undefined ? '' : `${call('DP', lit(Number(node.timeout)))};`);
  const leave = (node: PipelineNode) => (node.timeout === undefined ? '' : `${call('DQ', '')};`);
  /** `code` (which starts with `N=<id>;`) run under the node's own deadline, if it has a timeout. */
  const timed = (node: PipelineNode, id: number, code: string) => {
    if (node.timeout === undefined) return code;
    const head = `N=${id};${CHECK}`;
    return `${head}${enter(node)}${code.slice(head.length)}${leave(node)}`;
  };

  /** Code of a list of nodes; nodes after one that may end the run are guarded. */
  const genList = (list: PipelineNode[] | undefined, base: string, parent: number, loop: number): string => {
    let code = '';
    let guard = false;
    (list ?? []).forEach((node, i) => {
      const one = gen(node, `${base}[${i}]`, parent, loop);
      code += guard ? `if(!E){${one}}` : one;
      guard ||= mayEnd(node);
    });
    return code;
  };

  const gen = (node: PipelineNode, path: string, parent: number, loop: number): string => {
    const id = nodes.length;
    const before = awaits;
    if (node.type === 'if') {
      nodes.push({ path, pkg: 'if', kind: 'if', parent, loop, conditions: node.conditions.length, guard: guardOf(node) });
      const tests = node.conditions.map((c, i) => expr(id, expressionOf(c.condition), `conditions[${i}].condition: `));
      // TS[id]: when the node started (only while the trace has room: its event may be listed).
      let code = `${genList(node.elseFunctions, `${path}.elseFunctions`, id, loop)}${call('V', `${id},${node.elseFunctions ? EVENT.else : EVENT.none},0,0,TS[${id}]`)}`;
      for (let i = node.conditions.length - 1; i >= 0; i--) {
        const body = genList(node.conditions[i]!.functions, `${path}.conditions[${i}].functions`, id, loop);
        code = `C=${i};if(${tests[i]}){${body}${call('V', `${id},${EVENT.matched},${i},0,TS[${id}]`)}}else{${code}}`;
      }
      return guarded(node, id, timed(node, id, `N=${id};${CHECK}if(EC<RM)TS[${id}]=NOW();${code};`), awaits > before);
    }
    if (node.type === 'loop') {
      const code = genLoop(node, path, parent, loop, id);
      return guarded(node, id, timed(node, id, code), awaits > before);
    }
    const name = builtinName(node.functionPackage);
    if (name !== undefined && Object.hasOwn(HOST_BUILTINS, name)) return genAwaited(node, { builtin: name }, path, parent, loop, id);
    // User code: a script node, or a custom function (any package that is not a built-in; the run's validation
    // checked it is one of the run's custom functions).
    if (name === 'script') return genAwaited(node, { code: { kind: 'script', source: String(node.settings?.code) } }, path, parent, loop, id);
    if (name === undefined) return genAwaited(node, { code: { kind: 'custom' } }, path, parent, loop, id);
    // Validation refused every other package before the run.
    if (!INLINE_BUILTINS.has(name)) throw new Error(`${path}: ${node.functionPackage} cannot be compiled`);
    nodes.push({ path, pkg: node.functionPackage, kind: 'function', parent, loop, guard: guardOf(node) });
    const settings = settingsJs(node, id);
    const children = genList(node.functions, `${path}.functions`, id, loop);
    // D: set, Q: return, L: log, V: if (the settings are evaluated, then the node is recorded as ok).
    const helper = name === 'set' ? 'D' : name === 'return' ? 'Q' : name === 'log' ? 'L' : 'V';
    // V(id, event, x, duration, start, input, output): the settings are the node's input.
    const action = (value: string) => call(helper, helper === 'V' ? `${id},${EVENT.ok},0,0,0,${value}` : `${id},${value}`);
    const rest = name === 'return' ? '' : children;
    // A timeout covers the node's own work (settings and effect), not its nested functions.
    const [on, off] = [enter(node), leave(node)];
    const gated = node.settings !== undefined && 'condition' in node.settings;
    if (nodes[id]!.guard) {
      // The guard covers the node's own work; its nested functions run after it, when it ran (WR: not skipped).
      const own = gated
        ? `${CHECK}${on}S=${settings};if(!S.condition){${call('V', `${id},${EVENT.skipped},0,0,0,S`)};${off}WR=0}else{${action('S')};${off}}`
        : `${CHECK}${on}${action(settings)};${off}`;
      return `N=${id};if(${guardCall({ ...node, functions: undefined }, id, own)}){${rest}}`;
    }
    if (!gated) return `N=${id};${CHECK}${on}${action(settings)};${off}${rest}`;
    return `N=${id};${CHECK}${on}S=${settings};if(!S.condition){${call('V', `${id},${EVENT.skipped},0,0,0,S`)};${off}}else{${action('S')};${off}${rest}}`;
  };

  /**
   * A node that awaits the host, a host built-in (`HB`) or user code (`HU`): the guest evaluates its settings and
   * awaits the host (one `HQ` request); its guard (`WA`) runs its attempts in the guest and asks the host (`GH`)
   * after a failed one, as `WC` does. A timeout is `DP`/`DQ` around the node's own work; the host bounds its wait
   * by the deadline in force.
   */
  const genAwaited = (node: FunctionNode, what: Pick<InlineNode, 'builtin' | 'code'>, path: string, parent: number, loop: number, id: number): string => {
    nodes.push({ path, pkg: node.functionPackage, kind: 'function', parent, loop, guard: guardOf(node), ...what });
    const helper = what.code ? 'HU' : 'HB';
    awaits++;
    const settings = settingsJs(node, id);
    const children = genList(node.functions, `${path}.functions`, id, loop);
    const [on, off] = [enter(node), leave(node)];
    const gated = node.settings !== undefined && 'condition' in node.settings;
    const skip = `${call('V', `${id},${EVENT.skipped},0,0,0,S`)};${off}`;
    const await_ = (value: string) => `await ${call(helper, `${id},${value}`)};${off}`;
    if (nodes[id]!.guard) {
      const own = gated ? `${CHECK}${on}S=${settings};if(!S.condition){${skip}WR=0}else{${await_('S')}}` : `${CHECK}${on}${await_(settings)}`;
      return `N=${id};if(await ${call('WA', `${id},async function(){${own}},${nodes[id]!.guard!.wait ? 1 : 0}`)}){${children}}`;
    }
    if (!gated) return `N=${id};${CHECK}${on}${await_(settings)}${children}`;
    return `N=${id};${CHECK}${on}S=${settings};if(!S.condition){${skip}}else{${await_('S')}${children}}`;
  };

  const genLoop = (node: LoopNode, path: string, parent: number, loop: number, id: number): string => {
    nodes.push({ path, pkg: 'loop', kind: 'loop', parent, loop, guard: guardOf(node) });
    usesLoops = true;
    const [a, n, f, o, k] = ['a', 'n', 'f', 'o', 'k'].map((name) => `${name}${id}`);
    loopVars.push(a!, n!, f!, o!, k!);
    let head: string;
    if (node.items !== undefined) {
      const notArray = lit(`loop items ${JSON.stringify(node.items)} is not an array`);
      head = `${CHECK}${a}=${expr(id, itemsExpression(node.items))};if(${a}==null)${call('V', `${id},${EVENT.noItems}`)};else{if(!isArr(${a}))X(${id},"EXPRESSION_FAILED","TypeError",${notArray});${n}=${a}.length;${f}=0;`;
    } else {
      const bound = (b: number | string, key: string) => call('B', `${typeof b === 'number' ? lit(b) : expr(id, expressionOf(b))},"${key}"`);
      head = `${CHECK}${f}=${bound(node.range!.from, 'from')};${n}=${bound(node.range!.to, 'to')}-${f}+1;${a}=null;{`;
    }
    const before = awaits;
    let body = genList(node.functions, `${path}.functions`, id, id);
    // A body that awaits nothing lets no time pass but its own guest code's, which the interrupt handler bounds (as in
    // a program without awaits): the check before the loop is enough, none per iteration or per node inside.
    const check = awaits > before ? CHECK : '';
    if (!check) body = body.replaceAll(CHECK, '');
    const input = node.items !== undefined ? `{items:${a}}` : `{from:${f},to:${f}+${n}-1}`;
    // P: limit check and saved scope; Y: next item; Z: scope restored and the loop recorded (with its input).
    return `N=${id};${head}${o}=P(${id},${n});for(${k}=0;${k}<${n}&&!E;${k}++){Y(${id},${k},${a},${f});${check}${body}}Z(${id},${o},${n},${input})}`;
  };

  /** Whether a node may end the run (a `return` anywhere inside it). */
  const mayEnd = (node: PipelineNode): boolean => {
    if (node.type === 'loop') return (node.functions ?? []).some(mayEnd);
    if (node.type === 'if') return node.conditions.some((c) => (c.functions ?? []).some(mayEnd)) || (node.elseFunctions ?? []).some(mayEnd);
    return builtinName(node.functionPackage) === 'return' || (node.functions ?? []).some(mayEnd);
  };

  // The whole pipeline is one segment; nodes after one that may end the run are guarded (genList).
  const program = genList(functions, 'functions', -1, -1);
  const async = awaits > 0;

  if (nodes.length === 0) return { source: '', nodes, async: false };
  const helpers: Record<string, string> = {
    x: 'function x(i){return fns[i](ctx,scope)}',
    T: LIB.text.replace('function text', 'function T'),
    // put and merge of the shared library, with the built-ins they use read once per program instead of on every call
    // from `_` (a `set` in a 10,000-item loop calls them once per item). The same captured built-ins.
    M: `${LIB.put}${LIB.merge}`
      .replaceAll('_.def(', 'DEF(')
      .replaceAll('_.pd', 'PD')
      .replaceAll('_.isArr(', 'ISA(')
      .replaceAll('_.keys(', 'KEYS(')
      .replaceAll('_.ctx', 'ctx'),
    D: 'function D(id,S){merge(S);st.last=S;V(id,0,0,0,0,S,S)}',
    Q: 'function Q(id,S){st.result=S.value;st.ended=true;E=1;V(id,0,0,0,0,S,S.value)}',
    L: `function L(id,S){MS.push(T(S.message));V(id,${EVENT.log},MS.length-1);V(id,0,0,0,0,S)}`,
    // DP(ms)/DQ(): a node timeout. The host's deadline (DLH, src/sandbox/session.ts) moves only when the node's
    // ends earlier than the current one (HD, on the guest's clock): a timed node inside a longer timeout costs no call.
    // The stack is an object without a prototype, indexed by DN, and the clock is captured before user code runs:
    // an expression that replaces Array.prototype.pop, a setter on Array.prototype or Date.now cannot skew them
    // (nor move the host's deadline out of bounds: the session never pops below an attempt's own entries).
    DP: 'function DP(t){var d=NOW()+t;if(d<HD){DS[DN++]=HD;HD=d;DLH(t)}else DS[DN++]=-1}',
    DQ: 'function DQ(){var h=DS[--DN];if(h>=0){HD=h;DLH(-1)}}',
    // W(id, fn): the host (GH) runs fn attempt by attempt; each attempt and a given-up node start from the loop
    // scope, iteration and deadline (HD, DS: the host's was moved back by GH) the node began with. 1: the node ran (WR: its function was not skipped); 0: it failed
    // and the run goes on (continueOnError). A failure to pass up is thrown by GH.
    // WC(id, fn): the same with the attempts run by the guest, which calls GH(id, 1, error, ms, attempt) only when
    // one fails (2: try again; 0: give up, the run goes on; or GH throws) or, after retries, GH(id, 2, undefined, …)
    // once it succeeded. The mode is ours, never taken from the thrown value. RA[id]: the attempt running (a failure the guest cannot catch is traced with it).
    WC: `function WC(id,f){var h='currentItem'in scope,i=scope.currentItem,x=scope.currentIndex,it=I,a=0,t,r,b=function(){if(h){scope.currentItem=i;scope.currentIndex=x}else{delete scope.currentItem;delete scope.currentIndex}I=it};for(;;){a++;RA[id]=a;b();WR=1;N=id;t=NOW();try{f()}catch(e){r=GH(id,1,e,NOW()-t,a);if(r===2)continue;b();WR=0;N=id;return 0}if(a>1)GH(id,2,undefined,NOW()-t,a);N=id;return WR}}`,
    // HB(id, S): a host built-in with its evaluated settings S, awaited (HQ: the host checks the node and the JSON);
    // its result is merged into the context as a plain object, and the node recorded with its time. FV: the settings'
    // trace value while the host works, for the failed entry if it fails.
    HB: `async function HB(id,S){var t=NOW(),e=EC<RM?TV(S,MX):0,r;FV=e?[id,e]:0;r=await HQ(${REQUEST.builtin},id,J.stringify(S));FV=0;r=r===undefined?undefined:J.parse(r);merge(r);if(r!==undefined)st.last=r;V(id,${EVENT.ok},0,NOW()-t,t,S,r,e)}`,
    // WA(id, fn, w): WC for an async attempt (a host built-in's own work). An interrupt inside fn rejects its promise
    // like any failure; the node timeouts it entered are left on the guest's side and, as many (c), on the host's
    // (GH pops them, never below an attempt's floor), so the guard decides under the deadline the node began with. w: a retry that waits:
    // the host sleeps (HQ(sleep)) before the next attempt, which then checks the deadline (CHECK) as every node does.
    // HU(id, S): user code with its evaluated settings S (left in st.cur, where the `call` helper of the user-code
    // extension reads them), awaited (HQ(code): the host runs it and answers with the trace's
    // room and, in page mode, the returned value; the value is merged already). The input is encoded before the
    // call (the code may change its settings), the output after it.
    HU: `async function HU(id,S){var t=NOW(),e=EC<RM?TV(S,MX):0,r;FV=e?[id,e]:0;st.cur=S;st.out=undefined;r=J.parse(await HQ(${REQUEST.code},id,I));FV=0;RM=EC+r[0];RI=EC+r[1];if(r.length>2)st.out=r[2];V(id,${EVENT.ok},0,NOW()-t,t,S,st.out,e,e&&st.out===S?TV(S,MX):0)}`,
    WA: `async function WA(id,f,w){var h='currentItem'in scope,i=scope.currentItem,x=scope.currentIndex,it=I,hd=HD,dl=DN,a=0,t,r,c,b=function(){if(h){scope.currentItem=i;scope.currentIndex=x}else{delete scope.currentItem;delete scope.currentIndex}I=it};for(;;){a++;RA[id]=a;b();WR=1;N=id;t=NOW();try{await f()}catch(e){for(c=0;DN>dl;)if(DS[--DN]>=0)c++;HD=hd;r=GH(id,${GUARD.failed},e,NOW()-t,a,c);if(r===${ANSWER.again}){if(w)await HQ(${REQUEST.sleep},id,a);continue}b();WR=0;N=id;return ${ANSWER.gaveUp}}if(a>1)GH(id,${GUARD.succeeded},undefined,NOW()-t,a);N=id;return WR}}`,
    W: `function W(id,f){var h='currentItem'in scope,i=scope.currentItem,x=scope.currentIndex,it=I,hd=HD,dl=DN,b=function(){if(h){scope.currentItem=i;scope.currentIndex=x}else{delete scope.currentItem;delete scope.currentIndex}I=it;HD=hd;DN=dl};var r=GH(id,0,function(){b();WR=1;N=id;f()});if(!r){b();WR=0}N=id;return r&&WR}`,
    // X(id, code, type, message): an engine failure of node id (a loop's limit or items, a range bound, an expression
    // that does not compile), reported with its own code and message (FL).
    X: 'function X(id,code,type,m){N=id;FL=J.stringify([code,type,m]);throw new Error(m)}',
    B: `function B(v,key){if(typeof v!=='number'||!Number.isInteger(v)){var s=J.stringify(v)||"null";X(N,"EXPRESSION_FAILED","TypeError","loop range."+key+" must be an integer, got "+(s.length>1000?"a value over 1000 characters of JSON":s))}return v}`,
  };
  if (used.has('L')) used.add('T');
  if (usesLoops || used.has('B')) used.add('X');
  if (used.has('D') || used.has('HB')) used.add('M');
  if (used.has('DP')) used.add('DQ');
  const source =
    `var E=0,I=-1,N=-1,C=0,FL='',FV=0,S,EV,MS,AG,AO,EC,RM,RI,VA,T0,HD,DN=0,DS=Object.create(null),NOW=_.now,WR=1,RA=Object.create(null),TS=[],MX=${Math.max(16, Math.floor(traceValueBytes))},DEF=_.def,PD=_.pd,ISA=_.isArr,KEYS=_.keys,OC=Object.create` +
    (usesLoops ? `,K=[],isArr=Array.isArray${loopVars.map((name) => `,${name}`).join('')}` : '') +
    ';' +
    Object.entries(helpers)
      .filter(([name]) => used.has(name))
      .map(([, code]) => code)
      .join('') +
    // V records an event while the trace has room (logs have more): node, iteration, event, its number, duration,
    // start (ms since the segment began), index of its input and output in VA (encoded by TV, or e: the input encoded
    // already, f: the output; an output that is the input is 1) or -1; then counts per node (AG, keyed by the node's
    // id: an index key, no string made per event; AO keeps the order they began in, AGO reports them in it).
    TRACE_VALUE_JS +
    `function V(id,k,q,d,s,i,o,e,f){if(EC<(k===7?RI:RM)){var t=NOW(),v=-1;if(i!==undefined||o!==undefined){v=VA.length;var a=e||TV(i,MX);VA.push(a,f||(o===i?1:TV(o,MX)))}EV.push(id,I,k,q|0,d|0,(s||t)-T0,v);EC++}else{var a=AG[id];if(!a){a=AG[id]=[0,0,0,0];AO.push(id)}a[k===1?1:k===7?2:0]++;a[3]+=d|0}}function AGO(){for(var o=OC(null),j=0;j<AO.length;j++)o['i'+AO[j]]=AG[AO[j]];return o}` +
    (usesLoops
      ? `function P(id,n){if(n<0)n=0;if(n>${maxLoopIterations})X(id,${lit('LOOP_LIMIT')},"LimitError","The loop has "+n+" iterations; the limit is ${maxLoopIterations}");return{d:NOW(),o:I,h:'currentItem'in scope,i:scope.currentItem,x:scope.currentIndex}}` +
        `function Y(id,k,a,f){N=id;K[id]=k;I=k;scope.currentIndex=k;scope.currentItem=a?a[k]:f+k}` +
        `function R(o){if(o.h){scope.currentItem=o.i;scope.currentIndex=o.x}else{delete scope.currentItem;delete scope.currentIndex}}` +
        `function Z(id,o,n,x){R(o);I=o.o;V(id,${EVENT.iterations},n<0?0:n,NOW()-o.d,o.d,x)}`
      : '') +
    `var G=[${async ? 'async ' : ''}function(){${program.replaceAll(CHECK, async ? CHECK_CODE : '')}}];` +
    // run(k, iteration, room, room for logs, ms left before the host's deadline) runs segment k; run(-1) only reports what was recorded since the last report (after a failure, or for a guard) and forgets it
    // (run(-2), before user code runs, keeps FV, the awaiting node's input): [ended, events, log messages,
    // counts per node, failing node, failing condition, engine failure, active loop indexes (or 0), traced values, attempts].
    // go(k, …) starts async segment k the same way and returns its promise; run(-1) then reports.
    `function A(it,rm,ri,rem){EV=[];MS=[];AG=OC(null);AO=[];VA=[];T0=NOW();HD=T0+rem;DN=0;EC=0;RM=rm;RI=ri;FL='';FV=0;N=-1;I=it;E=0;` +
    `}api.run=function(k,it,rm,ri,rem){if(k>=0){A(it,rm,ri,rem);G[k]()}var t=J.stringify([E,EV,MS,AGO(),N,C,FL,${usesLoops ? 'K' : '0'},VA,RA,FV]);if(k<0){EV=[];MS=[];AG=OC(null);AO=[];VA=[];FL='';if(k===-1)FV=0}return t};` +
    `api.go=function(k,it,rm,ri,rem){A(it,rm,ri,rem);return G[k]()};`;
  return { source, nodes, async };
}
