import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { App } from '../context.js';
import { errorBody } from '../http/errors.js';

export interface StaticOptions {
  /** URL prefix → folder, e.g. `{ '/dist/': 'dist', '/': 'demo' }`. */
  mounts: Record<string, string>;
  /** JSON served at `GET /dev/config` (the demo's bootstrap); leave out in production. */
  devConfig?: () => unknown;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ts': 'text/plain; charset=utf-8',
};

/** Serves files of a few folders (the demo and the built library). Paths never leave their folder. */
export function registerStaticRoutes(app: App, options: StaticOptions): void {
  if (options.devConfig) {
    const devConfig = options.devConfig;
    app.get('/dev/config', (c) => c.json(devConfig() as object));
  }
  const mounts = Object.entries(options.mounts).sort((a, b) => b[0].length - a[0].length);
  app.get('*', async (c, next) => {
    let path: string;
    try {
      path = decodeURIComponent(new URL(c.req.url).pathname);
    } catch {
      return c.json(errorBody('INVALID_REQUEST', 'The path holds a malformed percent escape'), 400);
    }
    for (const [prefix, folder] of mounts) {
      if (!path.startsWith(prefix)) continue;
      const root = resolve(folder);
      let file = normalize(join(root, path.slice(prefix.length)));
      if (file !== root && !file.startsWith(root + sep)) return c.json(errorBody('NOT_FOUND', 'Not found'), 404);
      try {
        if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
        const body = await readFile(file);
        return c.body(body, 200, {
          'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
          'Cache-Control': 'no-cache',
        });
      } catch {}
    }
    await next();
  });
}
