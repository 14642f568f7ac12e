/**
 * Starts a SQLite reader thread from the TypeScript sources (tests under vitest): registers
 * scripts/ts-thread-loader.mjs, which transpiles src/**.ts on import, then imports thread.ts. The built package
 * never uses this file: there the pool starts dist/server/sqlite-reader-thread.mjs (entry-url.ts is replaced at
 * build time, rollup.config.mjs).
 */
import { register } from 'node:module';

register('../../../../scripts/ts-thread-loader.mjs', import.meta.url);
await import('./thread.ts');
