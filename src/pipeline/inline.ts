/**
 * Runs of expression-only nodes inside the guest in one call.
 *
 * A node is *inline* when the guest can run it without host services and without
 * per-node policies: a function node whose package is the built-in `set`, `return`,
 * `if` or `log` (no `timeout`, `retry` or `continueOnError`), an `if` node or a `loop`
 * node without `timeout`/`continueOnError`, whose expressions all compiled and whose
 * nested nodes are all inline. Consecutive inline nodes of a node list form a
 * *segment*; the run's program (one guest source, installed once per run) holds one
 * guest function per segment, so a 10,000-item loop of `if`/`set` costs one
 * host↔guest call instead of several per iteration. Other nodes run in the host
 * walker (src/pipeline/runner.ts), which calls the segments of their nested lists.
 *
 * The generated code holds only numbers, fixed engine code and JSON string literals:
 * user expressions stay separate guest functions (compiled by the `fns` helper), so
 * a malformed expression cannot change the program's structure.
 *
 * Inside a segment the guest records trace events (node id, iteration, outcome) while
 * the trace has room and counts the rest per node; the current node (`_.n`), the
 * failing condition (`_.c`), engine failures (`_.f`) and the index of every active
 * inline loop (`_.K[id]`) are kept in the guest's private state, where the host reads
 * them (`Session.peek`) to trace a failure, even after an interrupt.
 */
import { builtinName } from '../functions/catalog.js';
import { expressionOf, itemsExpression, settingsSpec, type Spec } from './templates.js';
import type { FunctionNode, IfNode, LoopNode, PipelineNode } from './types.js';

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
}

/** One step of a node list: an inline segment (nodes `start`..`end - 1`) or a host-run node. */
export type Step = { segment: number; start: number; end: number } | { host: number };

export interface Plan {
  /** Guest source of a function of `(api, _)` adding the `run`, `flush` and `unwind` helpers; empty when nothing is inline. */
  source: string;
  nodes: InlineNode[];
  /** The steps of each node list, by the list's base path (`functions`, `functions[2].functions`…). */
  lists: Map<string, Step[]>;
}

/** Event codes recorded by the guest (see `decodeEvent` in runner.ts). */
export const EVENT = { ok: 0, skipped: 1, matched: 2, else: 3, none: 4, iterations: 5, noItems: 6, log: 7 } as const;

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

/** The settings spec of a function node, as the host walker builds it too. */
export function settingsOf(node: FunctionNode, compile: (e: string) => number): Spec {
  return settingsSpec(node.settings, {
    compile,
    expressionKeys: ['condition'],
    literalKeys: builtinName(node.functionPackage) === 'script' ? ['code'] : [],
  });
}

/** JSON text as a JS string literal (U+2028/2029 escaped for older parsers). */
const lit = (value: unknown) => JSON.stringify(value).replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');

class NotInline extends Error {}

/**
 * Plans the pipeline: which runs of nodes are inline segments, and their guest program.
 * `compiled(source)` is the guest index of a compiled expression, undefined when it did not compile.
 */
export function planPipeline(functions: PipelineNode[], compiled: (source: string) => number | undefined, maxLoopIterations: number): Plan {
  const nodes: InlineNode[] = [];
  const lists = new Map<string, Step[]>();
  const segments: string[] = [];
  const keys: string[] = [];
  const loopVars: string[] = [];
  let usesLoops = false;

  const expr = (source: string): string => {
    const index = compiled(source);
    if (index === undefined) throw new NotInline();
    return `F[${index}](c,s)`;
  };
  const specJs = (spec: Spec): string => {
    switch (spec.k) {
      case 'x':
        return `F[${spec.i}](c,s)`;
      case 't':
        return `(""${spec.p.map((p) => (typeof p === 'number' ? `+T(F[${p}](c,s))` : `+${lit(p)}`)).join('')})`;
      case 'o':
        keys.push(lit(spec.n));
        return `O(N${keys.length - 1},[${spec.v.map(specJs).join(',')}])`;
      case 'a':
        return `[${spec.v.map(specJs).join(',')}]`;
      default:
        return spec.j !== undefined ? `J.parse(${lit(spec.j)})` : lit(spec.v ?? null);
    }
  };
  const noPolicies = (node: PipelineNode) =>
    node.timeout === undefined && !node.continueOnError && (!('retry' in node) || node.retry === undefined || node.retry.attempts <= 1);

  /** Code of a list of inline nodes (throws NotInline when one is not). */
  const genList = (list: PipelineNode[] | undefined, base: string, parent: number, loop: number): string =>
    (list ?? []).map((node, i) => gen(node, `${base}[${i}]`, parent, loop)).join('');

  const gen = (node: PipelineNode, path: string, parent: number, loop: number): string => {
    if (!noPolicies(node)) throw new NotInline();
    const id = nodes.length;
    if (node.type === 'if') {
      nodes.push({ path, pkg: 'if', kind: 'if', parent, loop });
      const tests = node.conditions.map((c) => expr(expressionOf(c.condition)));
      let code = `${genList(node.elseFunctions, `${path}.elseFunctions`, id, loop)}V(${id},${node.elseFunctions ? EVENT.else : EVENT.none},0,0)`;
      for (let i = node.conditions.length - 1; i >= 0; i--) {
        const body = genList(node.conditions[i]!.functions, `${path}.conditions[${i}].functions`, id, loop);
        code = `R.c=${i};if(${tests[i]}){${body}V(${id},${EVENT.matched},${i},0)}else{${code}}`;
      }
      return `if(!E){R.n=${id};${code}}`;
    }
    if (node.type === 'loop') return genLoop(node, path, parent, loop, id);
    const name = builtinName(node.functionPackage);
    if (!name || !INLINE_BUILTINS.has(name)) throw new NotInline();
    nodes.push({ path, pkg: node.functionPackage, kind: 'function', parent, loop });
    const spec = specJs(settingsOf(node, (e) => {
      const index = compiled(e);
      if (index === undefined) throw new NotInline();
      return index;
    }));
    const children = () => genList(node.functions, `${path}.functions`, id, loop);
    const ok = `V(${id},${EVENT.ok},0,0);`;
    let action: string;
    if (name === 'set') action = `M(S);st.last=S;${ok}${children()}`;
    else if (name === 'return') action = `st.result=S.value;st.ended=true;E=1;${ok}`;
    else if (name === 'log') action = `MS.push(T(S.message));V(${id},${EVENT.log},MS.length-1,0);${ok}${children()}`;
    else action = `${ok}${children()}`;
    return `if(!E){R.n=${id};S=${spec};if('condition'in S&&!S.condition)V(${id},${EVENT.skipped},0,0);else{${action}}}`;
  };

  const genLoop = (node: LoopNode, path: string, parent: number, loop: number, id: number): string => {
    nodes.push({ path, pkg: 'loop', kind: 'loop', parent, loop });
    usesLoops = true;
    const v = (name: string) => `${name}${id}`;
    loopVars.push(...['a', 'n', 'f', 'd', 'o', 'h', 'i', 'x', 'k'].map(v));
    let head: string;
    if (node.items !== undefined) {
      const notArray = lit(`loop items ${JSON.stringify(node.items)} is not an array`);
      head = `${v('a')}=${expr(itemsExpression(node.items))};if(${v('a')}==null)V(${id},${EVENT.noItems},0,0);else{if(!isArr(${v('a')}))X(${id},"EXPRESSION_FAILED","TypeError",${notArray});${v('n')}=${v('a')}.length;${v('f')}=0;`;
    } else {
      const bound = (b: number | string, key: string) => `B(${typeof b === 'number' ? lit(b) : expr(expressionOf(b))},"${key}")`;
      head = `${v('f')}=${bound(node.range!.from, 'from')};${v('n')}=${bound(node.range!.to, 'to')}-${v('f')}+1;if(${v('n')}<0)${v('n')}=0;${v('a')}=null;{`;
    }
    const body = genList(node.functions, `${path}.functions`, id, id);
    const [a, n, f, d, o, h, i, x, k] = ['a', 'n', 'f', 'd', 'o', 'h', 'i', 'x', 'k'].map(v);
    return (
      `if(!E){R.n=${id};${head}` +
      `if(${n}>${maxLoopIterations})X(${id},"LOOP_LIMIT","LimitError","The loop has "+${n}+" iterations; the limit is ${maxLoopIterations}");` +
      `${d}=Date.now();${o}=I;${h}='currentItem'in s;${i}=s.currentItem;${x}=s.currentIndex;` +
      `for(${k}=0;${k}<${n}&&!E;${k}++){R.n=${id};K[${id}]=${k};I=${k};s.currentIndex=${k};s.currentItem=${a}?${a}[${k}]:${f}+${k};${body}}` +
      `if(${h}){s.currentItem=${i};s.currentIndex=${x}}else{delete s.currentItem;delete s.currentIndex}` +
      `I=${o};V(${id},${EVENT.iterations},${n},Date.now()-${d})}}`
    );
  };

  /** Splits a node list into segments and host-run nodes; recurses into the lists of host-run nodes. */
  const planList = (list: PipelineNode[] | undefined, base: string) => {
    if (!list) return;
    const steps: Step[] = [];
    let open: { start: number; code: string[] } | undefined;
    const close = (end: number) => {
      if (!open) return;
      segments.push(open.code.join(''));
      steps.push({ segment: segments.length - 1, start: open.start, end });
      open = undefined;
    };
    list.forEach((node, i) => {
      const path = `${base}[${i}]`;
      const mark = { nodes: nodes.length, keys: keys.length, vars: loopVars.length, loops: usesLoops };
      let code: string | undefined;
      try {
        code = gen(node, path, -1, -1);
      } catch (error) {
        if (!(error instanceof NotInline)) throw error;
        nodes.length = mark.nodes;
        keys.length = mark.keys;
        loopVars.length = mark.vars;
        usesLoops = mark.loops;
      }
      if (code !== undefined) {
        open ??= { start: i, code: [] };
        open.code.push(code);
        return;
      }
      close(i);
      steps.push({ host: i });
      if (node.type === 'loop') planList(node.functions, `${path}.functions`);
      else if (node.type === 'if') {
        node.conditions.forEach((c, j) => planList(c.functions, `${path}.conditions[${j}].functions`));
        planList(node.elseFunctions, `${path}.elseFunctions`);
      } else planList(node.functions, `${path}.functions`);
    });
    close(list.length);
    lists.set(base, steps);
  };
  planList(functions, 'functions');

  if (segments.length === 0) return { source: '', nodes, lists };
  const source =
    `(function(api,_){var J=JSON,c=_.ctx,s=_.scope,F=_.fns,st=_.st,R=_,M=_.merge,T=_.text,E=0,I=-1,S,EV,MS,AG,EC,RM,RI` +
    (usesLoops ? `,isArr=Array.isArray,K=_.K=[]${loopVars.map((name) => `,${name}`).join('')}` : '') +
    keys.map((k, i) => `,N${i}=${k}`).join('') +
    `;function O(n,v){var o={};for(var i=0;i<n.length;i++)_.put(o,n[i],v[i]);return o}` +
    `function V(id,k,x,d){if(EC<(k===7?RI:RM)){EV.push(id,I,k,x,d);EC++}else{var a=AG['i'+id]||(AG['i'+id]=[0,0,0,0]);a[k===1?1:k===7?2:0]++;a[3]+=d}}` +
    (usesLoops
      ? `function X(id,code,type,m){R.n=id;R.f=J.stringify([code,type,m]);throw new Error(m)}` +
        `function B(v,key){if(typeof v!=='number'||!Number.isInteger(v))X(R.n,"EXPRESSION_FAILED","TypeError","loop range."+key+" must be an integer, got "+(J.stringify(v)||"null"));return v}` +
        `api.unwind=function(){if(R.h){s.currentItem=R.i;s.currentIndex=R.x}else{delete s.currentItem;delete s.currentIndex}};`
      : '') +
    `var G=[${segments.map((code) => `function(){${code}}`).join(',')}];` +
    `api.run=function(k,it,rm,ri){EV=[];MS=[];AG={};EC=0;RM=rm;RI=ri;R.f='';R.n=-1;I=it;E=0;` +
    (usesLoops ? `R.h='currentItem'in s;R.i=s.currentItem;R.x=s.currentIndex;` : '') +
    `G[k]();return api.flush()};api.flush=function(){return J.stringify([E,EV,MS,AG])}})`;
  return { source, nodes, lists };
}
