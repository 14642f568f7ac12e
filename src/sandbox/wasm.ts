/**
 * Where the QuickJS `.wasm` comes from, compiled once per process (or worker).
 *
 * - Browser: the engine chunk is told the URL (next to client.js, or `config.assetsUrl`)
 *   by its loader; the file is fetched only when the first pipeline runs.
 * - Node: read from the installed `@jitl/quickjs-wasmfile-release-sync` package.
 */
import { fetchWasmBytes } from './fetch-wasm.js';
import { noteLayout } from './wasm-layout.js';

export type WasmSource = string | URL | ArrayBuffer | Uint8Array | WebAssembly.Module;

let source: WasmSource | undefined;
let compiled: Promise<WebAssembly.Module> | undefined;

/** Sets where the wasm is loaded from. Takes effect for modules instantiated afterwards. */
export function configureWasm(next: WasmSource): void {
  if (source === next) return;
  source = next;
  compiled = undefined;
}

/** The compiled QuickJS module (memoized; a failed load is retried on the next call). */
export function loadWasmModule(): Promise<WebAssembly.Module> {
  if (!compiled) {
    compiled = compile(source).catch((error: unknown) => {
      compiled = undefined;
      throw error;
    });
  }
  return compiled;
}

async function compile(from: WasmSource | undefined): Promise<WebAssembly.Module> {
  if (from instanceof WebAssembly.Module) return from;
  if (from instanceof ArrayBuffer || from instanceof Uint8Array) return compileBytes(from instanceof Uint8Array ? from : new Uint8Array(from));
  if (from === undefined) return compileBytes(await readPackagedWasm());
  const url = String(from);
  if (url.startsWith('file:') || (!/^[a-z][a-z0-9+.-]*:/i.test(url) && typeof fetch !== 'function')) {
    const fs = await nodeBuiltin<typeof import('node:fs/promises')>('fs/promises');
    return compileBytes(await fs.readFile(url.startsWith('file:') ? new URL(url) : url));
  }
  return fetchWasm(url);
}

/** Fetches and compiles a wasm URL (fetch-wasm.ts) and notes its memory layout. */
export async function fetchWasm(url: string): Promise<WebAssembly.Module> {
  const { module, bytes } = await fetchWasmBytes(url);
  noteLayout(module, new Uint8Array(bytes));
  return module;
}

/** Compiles wasm bytes and notes their memory layout (wasm-layout.ts). */
async function compileBytes(bytes: Uint8Array): Promise<WebAssembly.Module> {
  const module = await WebAssembly.compile(bytes as BufferSource);
  noteLayout(module, bytes);
  return module;
}

/** Node only: the wasm file shipped in the variant package. */
async function readPackagedWasm(): Promise<Uint8Array> {
  const { createRequire } = await nodeBuiltin<typeof import('node:module')>('module');
  const fs = await nodeBuiltin<typeof import('node:fs/promises')>('fs/promises');
  const base = typeof __filename === 'string' ? __filename : import.meta.url;
  const path = createRequire(base).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
  return fs.readFile(path);
}

declare const __filename: string | undefined;

/** Loads a Node built-in without letting bundlers see a static import (the browser chunk never calls this). */
async function nodeBuiltin<T>(name: string): Promise<T> {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown; versions?: { node?: string } } }).process;
  if (!proc?.versions?.node) throw new Error('No wasm location configured for the pipeline engine');
  const viaProcess = proc.getBuiltinModule?.(`node:${name}`);
  if (viaProcess) return viaProcess as T;
  const specifier = `node:${name}`;
  return (await import(/* @vite-ignore */ specifier)) as T;
}
