/**
 * Where the QuickJS `.wasm` comes from, compiled once per process (or worker).
 *
 * - Browser: the engine chunk is told the URL (next to client.js, or `config.assetsUrl`)
 *   by its loader; the file is fetched only when the first pipeline runs.
 * - Node: read from the installed `@jitl/quickjs-wasmfile-release-sync` package.
 */
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
  if (from instanceof ArrayBuffer || from instanceof Uint8Array) return WebAssembly.compile(from as BufferSource);
  if (from === undefined) return WebAssembly.compile((await readPackagedWasm()) as BufferSource);
  const url = String(from);
  if (url.startsWith('file:') || (!/^[a-z][a-z0-9+.-]*:/i.test(url) && typeof fetch !== 'function')) {
    const fs = await nodeBuiltin<typeof import('node:fs/promises')>('fs/promises');
    return WebAssembly.compile((await fs.readFile(url.startsWith('file:') ? new URL(url) : url)) as BufferSource);
  }
  return fetchWasm(url);
}

/** Fetches and compiles a wasm URL, streaming (compiled while it downloads) when it is served as application/wasm. */
export async function fetchWasm(url: string): Promise<WebAssembly.Module> {
  const response = await fetch(url, { credentials: 'same-origin' });
  if (!response.ok) throw new Error(`Could not load the QuickJS engine from ${url}: HTTP ${response.status}`);
  const type = response.headers.get('Content-Type') ?? '';
  if (typeof WebAssembly.compileStreaming === 'function' && type.startsWith('application/wasm')) return WebAssembly.compileStreaming(response);
  return WebAssembly.compile(await response.arrayBuffer());
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
