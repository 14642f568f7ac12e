/**
 * Fetches and compiles a wasm URL, streaming (compiled while it downloads) when it is served as application/wasm, and
 * keeps its bytes: the engine reads its memory layout from them (wasm-layout.ts), which a compiled Module cannot give
 * back. Kept apart from that reader so that the page's bundle, which fetches the engine's wasm for its Worker, does not
 * carry it.
 */
export async function fetchWasmBytes(url: string): Promise<{ module: WebAssembly.Module; bytes: ArrayBuffer }> {
  const response = await fetch(url, { credentials: 'same-origin' });
  if (!response.ok) throw new Error(`Could not load the QuickJS engine from ${url}: HTTP ${response.status}`);
  const type = response.headers.get('Content-Type') ?? '';
  const bytes = response.clone().arrayBuffer();
  // Both awaited together: a body that fails midway rejects both, and neither goes unhandled.
  const [module, copy] = await Promise.all([
    typeof WebAssembly.compileStreaming === 'function' && type.startsWith('application/wasm')
      ? WebAssembly.compileStreaming(response)
      : bytes.then((b) => WebAssembly.compile(b)),
    bytes,
  ]);
  return { module, bytes: copy };
}
