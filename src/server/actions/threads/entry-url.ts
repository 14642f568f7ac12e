/**
 * Where a run thread starts. From src/ (tests under vitest): dev-thread.mjs, which registers a TypeScript
 * loader and imports thread.ts. The build replaces this module (rollup.config.mjs, `threadEntry`) with the
 * URL of dist/server/run-thread.mjs, emitted from thread.ts as an entry of its own.
 */
import { URL as NodeURL } from 'node:url';

// Not the `new URL('…', import.meta.url)` pattern: vitest's web environments (happy-dom) rewrite that one into an
// http: URL of their dev server. Node's URL too: a DOM shim may replace the global one.
const here = import.meta.url;
export const THREAD_ENTRY: URL = new NodeURL('./dev-thread.mjs', here);
