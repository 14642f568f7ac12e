import type { QuickJSContext, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten-core';
import type { WasmLayout } from './wasm-layout.js';

/**
 * Memory images: a primed sandbox (a runtime and context with the engine's base script and a definition's program
 * and expressions compiled, no run's code executed) saved as the bytes of its module's linear memory, and put back
 * after each run of that definition instead of building a new runtime and context and compiling it all again.
 * Everything a run did is undone, because everything it could change is in those bytes (or in the JS objects that
 * quickjs-emscripten keeps beside them, saved and put back too); a run sees exactly the sandbox the previous run saw.
 *
 * What is saved, for Emscripten's layout `[data][bss][stack][heap]` (wasm-layout.ts):
 * - the data and bss, `[0, lowEnd)`: everything up to the initialized data's end plus `BSS_ROOM` bytes (the C
 *   library's and QuickJS's zero-initialized statics, a few KB in this build), checked to lie far below the stack
 *   a run can use;
 * - the heap, from the stack's top to the break (`sbrk`) at capture time. Bytes above the break are free to the
 *   allocator, which never assumes they are zero (calloc clears what it hands out);
 * - not the stack: between two calls into the module nothing lives there. Images are only captured and restored
 *   from the host's top level (the idle work and a session's close), never from inside a host function.
 *
 * Where the break and the context's random state are is found once per compiled module (`probeLayout` on a fresh
 * instance, `findRandomState` on the first image); when either cannot be found unambiguously there are no images and
 * every run builds its sandbox as before.
 */

/** Room left past the initialized data for the bss (zero-initialized statics). */
const BSS_ROOM = 64 * 1024;
/** The stack a run may use below the stack's top, at least, for images to be used (runs ask for 128 KB by default). */
const STACK_ROOM = 1024 * 1024;
/** Bytes saved past the top chunk's address: its header, and more. */
const TOP_HEADER = 64;
/** Bytes dlmalloc keeps between its top chunk's end and the break (its segment record: 40 in this build). */
const TOP_SLACK = 256;
/** Bytes of a context's struct searched for its random state. */
const CONTEXT_BYTES = 2048;

export interface HeapLayout {
  /** End of the data and bss saved in an image. */
  lowEnd: number;
  /** Start of the heap (the stack's top). */
  heapStart: number;
  /** Address of the allocator's break (Emscripten's `sbrk_val`). */
  breakAt: number;
  /**
   * Address of dlmalloc's top chunk pointer, when found: the heap is saved up to that chunk's header only (the rest of
   * it is free, up to the break), so a freed probe or a run that once grew the heap does not make every image bigger.
   */
  topAt?: number;
  /** Offset of `random_state` (the `Math.random` xorshift64* state) in a context; found on the first image. */
  randomOffset?: number | null;
  /** Whether the first image found the gap between the saved data and the stack's room untouched (bss within BSS_ROOM). */
  gapChecked?: boolean;
  /** Set when a check failed: no images for this build. */
  unusable?: boolean;
}

interface Emscripten {
  _malloc(bytes: number): number;
  _free(ptr: number): void;
}

interface HostRefMap {
  nextId: number;
  freelist: number[];
  groups: Map<number, Map<number, unknown>>;
}

interface Managed {
  _disposables: { value: Set<unknown> };
}

/** The fields of quickjs-emscripten's objects that a run can change on the JS side (checked before use). */
interface Internals {
  runtime: { hostRefs: HostRefMap; scope: Managed };
  ctx: { ctx: { value: number }; memory: { scope: Managed }; evalCode: QuickJSContext['evalCode'] } & Record<string, unknown>;
}

/** Lazily made handles a context caches; made before capture so that a run never makes one the image lacks. */
const CACHED = ['_undefined', '_null', '_false', '_true', '_global', '_BigInt', '_Symbol', '_SymbolIterator', '_SymbolAsyncIterator'];

/**
 * Finds where a fresh module keeps its break, by a probe allocation that must move it: the one word of the data
 * and bss that grew past the probe's end with it and kept its value when the probe was freed. Undefined when the
 * layout is not the expected one.
 */
export function probeLayout(quickjs: QuickJSWASMModule, memory: WebAssembly.Memory, wasm: WasmLayout): HeapLayout | undefined {
  const lowEnd = Math.ceil((wasm.dataEnd + BSS_ROOM) / 8) * 8;
  if (lowEnd + STACK_ROOM > wasm.stackTop) return undefined;
  const em = (quickjs as unknown as { module?: Partial<Emscripten> }).module;
  if (typeof em?._malloc !== 'function' || typeof em._free !== 'function') return undefined;
  const words = lowEnd / 4;
  const before = new Uint32Array(memory.buffer.slice(0, lowEnd));
  const size = 4 * 1024 * 1024;
  const probe = em._malloc(size);
  if (!probe) return undefined;
  const during = new Uint32Array(memory.buffer.slice(0, lowEnd));
  em._free(probe);
  const after = new Uint32Array(memory.buffer, 0, words);
  // The break grew past the probe's end and stays there; dlmalloc's top chunk moved past it and came back.
  const breaks: number[] = [];
  const tops: number[] = [];
  for (let i = 0; i < words; i++) {
    const v = during[i]!;
    if (v === before[i] || v < probe + size || v > memory.buffer.byteLength || before[i]! < wasm.stackTop) continue;
    if (after[i] === v) breaks.push(i * 4);
    else if (after[i] === before[i] && before[i]! < probe + size) tops.push(i * 4);
  }
  if (breaks.length !== 1) return undefined;
  return { lowEnd, heapStart: wasm.stackTop, breakAt: breaks[0]!, topAt: tops.length === 1 ? tops[0] : undefined };
}

/** xorshift64*'s state step, as QuickJS's `Math.random` takes it. */
function xorshiftStep(x: bigint): bigint {
  const mask = (1n << 64n) - 1n;
  let s = x ^ (x >> 12n);
  s = (s ^ (s << 25n)) & mask;
  return s ^ (s >> 27n);
}

/** The offset of the context's `Math.random` state: the one 8-byte word one call moved by one xorshift64* step. */
function findRandomState(memory: WebAssembly.Memory, ctx: Internals['ctx']): number | null {
  const base = ctx.ctx.value;
  if (base % 8 !== 0 || base + CONTEXT_BYTES > memory.buffer.byteLength) return null;
  const before = new BigUint64Array(memory.buffer.slice(base, base + CONTEXT_BYTES));
  const r = ctx.evalCode('Math.random()');
  if (r.error) {
    r.error.dispose();
    return null;
  }
  r.value.dispose();
  const after = new BigUint64Array(memory.buffer.slice(base, base + CONTEXT_BYTES));
  const found: number[] = [];
  for (let i = 0; i < before.length; i++) if (before[i] !== after[i] && after[i] === xorshiftStep(before[i]!)) found.push(i * 8);
  return found.length === 1 ? found[0]! : null;
}

/** A saved sandbox: its memory and the JS-side state of its runtime and context. */
export interface MemoryImage {
  restore(): void;
}

function internals(runtime: QuickJSRuntime, ctx: QuickJSContext): Internals | undefined {
  const r = runtime as unknown as Partial<Internals['runtime']>;
  const c = ctx as unknown as Partial<Internals['ctx']>;
  const ok =
    typeof r.hostRefs === 'object' &&
    typeof r.hostRefs.nextId === 'number' &&
    Array.isArray(r.hostRefs.freelist) &&
    r.hostRefs.groups instanceof Map &&
    r.scope?._disposables?.value instanceof Set &&
    c.memory?.scope?._disposables?.value instanceof Set &&
    typeof c.ctx?.value === 'number' &&
    CACHED.every((key) => key in c);
  return ok ? ({ runtime: r, ctx: c } as Internals) : undefined;
}

/**
 * Saves the module's memory with this runtime and context, the only ones alive in it. Undefined when the layout
 * does not allow it (then the caller goes on without an image).
 */
export function captureImage(memory: WebAssembly.Memory, layout: HeapLayout, runtime: QuickJSRuntime, ctx: QuickJSContext): MemoryImage | undefined {
  const js = internals(runtime, ctx);
  if (!js || layout.unusable) return undefined;
  if (!layout.gapChecked) {
    // Once per build, with a runtime and context alive: nothing but the stack's untouched bottom lies past the saved
    // data (a bigger bss than BSS_ROOM would show here, and would otherwise not be put back).
    layout.gapChecked = true;
    const gap = new Uint32Array(memory.buffer, layout.lowEnd, (layout.heapStart - STACK_ROOM - layout.lowEnd) >> 2);
    if (gap.some((word) => word !== 0)) layout.unusable = true;
    if (layout.unusable) return undefined;
  }
  if (layout.randomOffset === undefined) layout.randomOffset = findRandomState(memory, js.ctx);
  const randomOffset = layout.randomOffset;
  if (randomOffset === null) return undefined;
  // The handles a context makes on first use, made now: in the image, not in a run.
  void [ctx.undefined, ctx.null, ctx.false, ctx.true, ctx.global];
  const view = new DataView(memory.buffer);
  const brk = view.getUint32(layout.breakAt, true);
  if (brk < layout.heapStart || brk > memory.buffer.byteLength) return undefined;
  // The heap up to dlmalloc's top chunk, when that chunk checks out (its head: a size that ends just below the break,
  // the previous chunk in use); else up to the break.
  const top = layout.topAt === undefined ? brk : view.getUint32(layout.topAt, true);
  const head = top >= layout.heapStart && top + 8 <= brk ? view.getUint32(top + 4, true) : 0;
  const topEnd = top + (head & ~7);
  const end = head & 1 && topEnd <= brk && brk - topEnd <= TOP_SLACK ? Math.min(brk, top + TOP_HEADER) : brk;
  const low = new Uint8Array(memory.buffer.slice(0, layout.lowEnd));
  const heap = new Uint8Array(memory.buffer.slice(layout.heapStart, end));
  const refs = js.runtime.hostRefs;
  const savedRefs = { nextId: refs.nextId, freelist: [...refs.freelist], groups: [...refs.groups].map(([k, g]) => [k, [...g]] as const) };
  const cached = CACHED.map((key) => [key, js.ctx[key]] as const);
  const ctxScope = [...js.ctx.memory.scope._disposables.value];
  const runtimeScope = [...js.runtime.scope._disposables.value];
  const ctxAt = js.ctx.ctx.value;
  const seed = new BigUint64Array(1);
  return {
    restore() {
      const bytes = new Uint8Array(memory.buffer);
      bytes.set(low, 0);
      bytes.set(heap, layout.heapStart);
      refs.nextId = savedRefs.nextId;
      refs.freelist = [...savedRefs.freelist];
      refs.groups = new Map(savedRefs.groups.map(([k, g]) => [k, new Map(g)]));
      for (const [key, value] of cached) js.ctx[key] = value;
      reset(js.ctx.memory.scope, ctxScope);
      reset(js.runtime.scope, runtimeScope);
      // Every run draws its own Math.random sequence (the image's state would repeat it in each).
      do globalThis.crypto.getRandomValues(seed);
      while (seed[0] === 0n);
      new DataView(memory.buffer).setBigUint64(ctxAt + randomOffset, seed[0]!, true);
    },
  };
}

function reset(scope: Managed, items: unknown[]): void {
  const set = scope._disposables.value;
  set.clear();
  for (const item of items) set.add(item);
}
