#!/usr/bin/env node
// `npm start`: builds if needed, then serves the reference backend with the demo app on an embedded database.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce((max, e) => {
    const p = join(dir, e.name);
    return Math.max(max, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }, 0);
const outputs = ['dist/client.js', 'dist/server.mjs', 'dist/index.mjs'].map((f) => join(root, f));
const stale =
  outputs.some((f) => !existsSync(f)) ||
  Math.min(...outputs.map((f) => statSync(f).mtimeMs)) < Math.max(newest(join(root, 'src')), statSync(join(root, 'rollup.config.mjs')).mtimeMs);
if (stale) {
  const first = outputs.some((f) => !existsSync(f));
  console.log(`[start] ${first ? 'first start: building dist/' : 'sources changed: rebuilding dist/'} (a few minutes; one line per bundle) …`);
  try {
    const { buildWithProgress } = await import('./build-progress.mjs');
    await buildWithProgress(join(root, 'rollup.config.mjs'));
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') {
      console.error(`[start] the build failed: ${error?.message ?? error}`);
      process.exit(1);
    }
    execSync('npm run build', { cwd: root, stdio: 'inherit' }); // no Rollup API to report progress with
  }
}

const { startDemo } = await import(join(root, 'demo/serve.mjs'));
const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';
// The URL browsers reach the server at, behind a proxy or on another host name (pages and links use it).
const publicUrl = process.env.PUBLIC_URL || undefined;
const dataDir = process.env.DATA_DIR ?? join(root, '.data');
let server;
try {
  ({ server } = await startDemo({ port, host, dataDir, publicUrl }));
} catch (error) {
  if (error?.code === 'EADDRINUSE') {
    console.error(`[start] port ${port} on ${host} is already in use: stop the other process or set PORT=<free port>`);
    process.exit(1);
  }
  throw error;
}
console.log(`[start] demo app: ${server.url}/   (data in ${dataDir}; Ctrl+C to stop)`);
const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
