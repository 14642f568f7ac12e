// Starts the reference backend serving the demo app (demo/) and the built library (dist/), then seeds the demo
// through the public API. Used by `npm start`, by the end-to-end tests and by demo/screenshots.mjs.
import { join } from 'node:path';
import { seedDemo } from './seed.mjs';

const root = new URL('..', import.meta.url).pathname;

/** `timezone`: the zone of the scheduled demo action (default: this machine's zone). */
export async function startDemo({ port = 0, host = '127.0.0.1', publicUrl, dataDir, memory = false, clock, limits, log, timezone } = {}) {
  const { startServer } = await import(join(root, 'dist/server.mjs'));
  let config;
  const server = await startServer({
    port,
    host,
    publicUrl,
    dataDir,
    memory,
    clock,
    limits,
    log,
    static: {
      mounts: { '/dist/': join(root, 'dist'), '/': join(root, 'demo') },
      // Dev only: the demo screen fetches its configuration here instead of hard-coding a token.
      devConfig: () => config,
    },
  });
  const { appId, organizationId, clientToken, apiToken } = server.bootstrap;
  // The screen carries the client token (what a page may hold). `adminToken` is for the demo's actions panel only,
  // which stands in for the studio (list with publication state, logs, publish, debug page): development only.
  config = { baseUrl: server.publicUrl, appId, organizationId, authToken: clientToken, adminToken: apiToken };
  const seeded = await seedDemo({ url: server.url, bootstrap: server.bootstrap, dist: join(root, 'dist/index.mjs'), timezone });
  return { server, seeded };
}
