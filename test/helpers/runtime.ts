import { existsSync, readFileSync } from 'node:fs';

/** The built runtime's file names (dist/runtime.json: content-hashed engine chunk and wasm). Throws when it is not built. */
export function runtimeFiles(): { engine: string; wasm: string } & Record<string, string> {
  if (!existsSync('dist/runtime.json') || !existsSync('dist/client.js'))
    throw new Error('dist/client.js or dist/runtime.json is missing: run `npm run build` first (npm test does)');
  return JSON.parse(readFileSync('dist/runtime.json', 'utf8')) as { engine: string; wasm: string } & Record<string, string>;
}
