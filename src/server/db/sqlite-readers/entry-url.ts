/**
 * Where a SQLite reader thread starts. From src/ (tests under vitest): dev-thread.mjs, which registers a
 * TypeScript loader and imports thread.ts. The build replaces this module (rollup.config.mjs, `threadEntry`)
 * with the URL of dist/server/sqlite-reader-thread.mjs, emitted from thread.ts as an entry of its own.
 */
import { URL as NodeURL } from 'node:url';

// Not `new URL('…', import.meta.url)`: see src/server/actions/threads/entry-url.ts.
const here = import.meta.url;
export const READER_ENTRY: URL = new NodeURL('./dev-thread.mjs', here);
