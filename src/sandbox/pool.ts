import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSWASMModule } from 'quickjs-emscripten-core';
import releaseVariant from '@jitl/quickjs-wasmfile-release-sync';
import { type HeapLayout, type MemoryImage, probeLayout } from './memory-image.js';
import { type Prime, retireModule, settleModule, type Spare } from './session.js';
import { loadWasmModule } from './wasm.js';
import { layoutOf } from './wasm-layout.js';

const PAGE = 65_536;
/** The prebuilt wasm's declared minimum (16 MB). */
const INITIAL_PAGES = 256;
/** Idle modules kept per memory size; more concurrent runs instantiate more, released ones beyond this are dropped. */
const MAX_IDLE = 2;
/** A module whose memory grew past this is dropped after its run instead of being reused (memory never shrinks). */
const RECYCLE_ABOVE_BYTES = 64 * 1024 * 1024;

/** One instantiated QuickJS module with its own hard-capped linear memory. */
export interface SandboxModule {
  readonly quickjs: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  readonly maxBytes: number;
  /** Set after an out-of-memory, an abort or a host stack overflow: never reused. */
  broken: boolean;
  /** Host functions and interrupt handlers of this module running (wasm is on the stack): no image is saved or put back. */
  depth?: number;
  /** A definition whose priming failed on this module: not primed again when its runs open (session.ts `primeNow`). */
  unprimable?: Prime;
  /** Closes the last run's session: still to run when that was left for an idle moment (session.ts `closeWhenIdle`). */
  closing?: () => void;
  /** A fresh sandbox prepared while idle, for the next session (session.ts `Spare`). */
  spare?: Spare;
  /** Between acquire and release. */
  inUse?: boolean;
  /** The program and expressions (JSON) of the last session opened on it: what its next spare is primed with. */
  prime?: Prime;
  /** Where memory images save this module's state (memory-image.ts); undefined: no images for it. */
  layout?: HeapLayout;
  /** Its primed spare saved as a memory image: the session that takes that spare puts the image back when it closes. */
  image?: { spare: Spare; primed: NonNullable<Spare['primed']>; memory: MemoryImage };
}

const idle = new Map<number, SandboxModule[]>();

/** Rounds a byte cap to whole wasm pages, at least the module's initial 16 MB plus headroom. */
export function memoryPages(maxBytes: number): number {
  return Math.max(INITIAL_PAGES + 64, Math.ceil(maxBytes / PAGE));
}

/** A module with a memory capped at `maxBytes` (rounded to pages): an idle one, or a new instance of the compiled wasm. */
export async function acquireModule(maxBytes: number): Promise<SandboxModule> {
  const pages = memoryPages(maxBytes);
  const list = idle.get(pages);
  for (let reuse = list?.pop(); reuse; reuse = list?.pop()) {
    // Its last session may still be open (closed when idle): closing it may show the module is not reusable.
    settleModule(reuse);
    if (reusable(reuse)) {
      reuse.inUse = true;
      return reuse;
    }
  }
  const wasmModule = await loadWasmModule();
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: pages });
  const emscriptenModule = { printErr: quietAborts } as NonNullable<Parameters<typeof newVariant>[1]['emscriptenModule']>;
  const quickjs = await newQuickJSWASMModuleFromVariant(newVariant(releaseVariant, { wasmModule, wasmMemory: memory, emscriptenModule }));
  return { quickjs, memory, maxBytes: pages * PAGE, broken: false, inUse: true, layout: heapLayout(wasmModule, quickjs, memory) };
}

/** The layout of the last module instantiated (null: none found). */
let lastLayout: HeapLayout | null = null;

/** Whether the last module instantiated can save memory images: its layout was found and not found wanting since. */
export function memoryImagesOn(): boolean {
  return lastLayout !== null && lastLayout.randomOffset !== null && !lastLayout.unusable;
}

/** Per compiled wasm: where its instances keep their state (memory-image.ts), probed on its first instance. */
const heapLayouts = new WeakMap<WebAssembly.Module, HeapLayout | null>();

function heapLayout(wasmModule: WebAssembly.Module, quickjs: QuickJSWASMModule, memory: WebAssembly.Memory): HeapLayout | undefined {
  let layout = heapLayouts.get(wasmModule);
  if (layout === undefined) {
    const wasm = layoutOf(wasmModule);
    layout = (wasm && probeLayout(quickjs, memory, wasm)) || null;
    heapLayouts.set(wasmModule, layout);
  }
  lastLayout = layout;
  return layout ?? undefined;
}

/**
 * The module's stderr. Disposing a runtime that ran out of memory or was interrupted mid-allocation fails QuickJS's
 * `list_empty(&rt->gc_obj_list)` assertion, which aborts the module: session.ts catches that, marks the module
 * broken and drops it, so the "Aborted(…)" line Emscripten prints first says nothing the run does not already
 * report. Anything else (another assertion, an abort during a run) is written as before.
 */
function quietAborts(text: string): void {
  if (!/^Aborted\(Assertion failed: list_empty\(&rt->gc_obj_list\)/.test(String(text))) console.error(text);
}

const reusable = (module: SandboxModule) => !module.broken && module.memory.buffer.byteLength <= RECYCLE_ABOVE_BYTES;

/** Gives a module back after a run; broken or bloated modules are dropped for the garbage collector. */
export function releaseModule(module: SandboxModule): void {
  module.inUse = false;
  if (!reusable(module)) return;
  const pages = module.maxBytes / PAGE;
  const list = idle.get(pages) ?? [];
  if (list.length >= MAX_IDLE) return;
  list.push(module);
  idle.set(pages, list);
}

/** Drops every idle module (tests, or a host freeing memory). */
export function drainPool(): void {
  for (const list of idle.values()) for (const module of list) retireModule(module);
  idle.clear();
}
