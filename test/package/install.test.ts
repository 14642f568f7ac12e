import { execFileSync, type ExecFileSyncOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPackagesError } from '../../src/server/dependencies.js';

/**
 * What an app gets from `npm install in-app-runtime`: the built package (`npm test` builds first) is packed,
 * the tarball installed into a fresh project as a user would (npm's cache has the client's dependencies after
 * the repo's own install: `--prefer-offline`), and used from ESM, CJS and TypeScript. Outside test/integration,
 * so it runs once (the sqlite project), not again on PostgreSQL. Install figures: scripts/bench-install.mjs.
 */
const ROOT = resolve(__dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const SERVER_ONLY = ['better-sqlite3', 'pg', 'web-push', 'hono', '@hono/node-server', 'mingo', 'cron-parser'];

let work = '';
let app = '';

function run(command: string, args: string[], options: ExecFileSyncOptions = {}): string {
  try {
    return execFileSync(command, args, { cwd: app, encoding: 'utf8', stdio: 'pipe', timeout: 120_000, ...options }) as string;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}
const node = (...args: string[]) => run(process.execPath, args);

/** Every path under `dir` (node_modules included), relative to it. */
function walk(dir: string, base = ''): string[] {
  return readdirSync(join(dir, base), { withFileTypes: true }).flatMap((entry) => {
    const rel = join(base, entry.name);
    return entry.isDirectory() ? [rel, ...walk(dir, rel)] : [rel];
  });
}

beforeAll(() => {
  // Fail (not skip) without a build: this test is about the built package.
  const missing = ['dist/index.mjs', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts', 'dist/server.mjs', 'dist/server.d.ts'].filter(
    (file) => !existsSync(join(ROOT, file)),
  );
  if (missing.length > 0) throw new Error(`run \`npm run build\` first: ${missing.join(', ')} missing`);

  work = mkdtempSync(join(tmpdir(), 'iar-package-'));
  app = join(work, 'app');
  mkdirSync(app);
  const [packed] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT })) as { filename: string }[];
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'iar-install-check', private: true, type: 'module' }, null, 2));
  const started = performance.now();
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, packed!.filename)]);
  console.log(`[package] npm install of the tarball: ${((performance.now() - started) / 1000).toFixed(1)} s`);
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('npm install in-app-runtime (the packed tarball, in a fresh project)', () => {
  it('installs no server package and builds nothing native', () => {
    const modules = join(app, 'node_modules');
    expect(existsSync(join(modules, 'in-app-runtime/dist/index.mjs'))).toBe(true);
    expect(SERVER_ONLY.filter((name) => existsSync(join(modules, name)))).toEqual([]);
    const paths = walk(modules);
    expect(paths.filter((p) => p.endsWith('.node') || /(^|\/)build\/Release$/.test(p))).toEqual([]);
  });

  it('works from ESM: creates a client and runs a pipeline in the QuickJS sandbox', () => {
    const out = node(
      '--input-type=module',
      '-e',
      `import { createClient, isApiError } from 'in-app-runtime';
       const client = createClient({ baseUrl: 'http://127.0.0.1:9', appId: 1 });
       const result = await client.App.Actions.Pipeline.run({
         pipeline: [
           { functionPackage: 'com.client.function.script', settings: { code: 'return { doubled: context.x * 2 };' } },
           { functionPackage: 'com.client.function.return', settings: { value: '{{ doubled }}' } },
         ],
         payload: { x: 21 },
         log: false,
       });
       console.log(JSON.stringify({ connect: typeof client.DataSources.connect, isApiError: typeof isApiError, result }));`,
    );
    expect(JSON.parse(out)).toEqual({ connect: 'function', isApiError: 'function', result: 42 });
  });

  it('works from CJS: require() gets the same API', () => {
    const out = node(
      '-e',
      `const { createClient, isApiError } = require('in-app-runtime');
       const client = createClient({ baseUrl: 'http://127.0.0.1:9', appId: 1 });
       console.log(JSON.stringify({ connect: typeof client.DataSources.connect, isApiError: typeof isApiError }));`,
    );
    expect(JSON.parse(out)).toEqual({ connect: 'function', isApiError: 'function' });
  });

  it('runs device pipelines on a worker thread (dist/engine-thread.mjs), from ESM and CJS', () => {
    // A spinning run (1 s limit) while a timer ticks: on the thread the timer fires all along; inline it would not.
    const body = (load: string) => `${load}
       const client = createClient({ baseUrl: 'http://127.0.0.1:9', appId: 1, limits: { runTimeoutMs: 1000 } });
       const pipeline = [{ functionPackage: 'com.client.function.script', settings: { code: 'while (true) {}' } }];
       let ticks = 0;
       const timer = setInterval(() => ticks++, 20);
       client.App.Actions.Pipeline.runWithTrace({ pipeline, log: false }).then((outcome) => {
         clearInterval(timer);
         console.log(JSON.stringify({ code: outcome.error && outcome.error.code, ticked: ticks > 10 }));
       });`;
    const esm = node('--input-type=module', '-e', body(`import { createClient } from 'in-app-runtime';`));
    expect(JSON.parse(esm)).toEqual({ code: 'TIMEOUT', ticked: true });
    const cjs = node('-e', body(`const { createClient } = require('in-app-runtime');`));
    expect(JSON.parse(cjs)).toEqual({ code: 'TIMEOUT', ticked: true });
  }, 60_000);

  it('its types check in strict TypeScript, moduleResolution node16 (ESM and CJS) and bundler', () => {
    writeFileSync(
      join(app, 'check.ts'),
      `import { createClient, isApiError, type Client, type Pagination } from 'in-app-runtime';
import type { RunningServer, ServerOptions } from 'in-app-runtime/server';

const client: Client = createClient({ baseUrl: 'http://127.0.0.1:8080', appId: 1, authToken: 'iar_api_x' });
export async function firstPage(): Promise<{ names: string[]; pagination: Pagination }> {
  const bookings = await client.DataSources.connect('Bookings');
  const { entries, pagination } = await bookings.query<{ name: string }>({ order: [['createdAt', 'DESC']], limit: 5, includePagination: true });
  return { names: entries.map((e) => e.data.name), pagination };
}
export const describeError = (e: unknown): string => (isApiError(e) ? \`\${e.status} \${e.code}\` : String(e));
export const options: ServerOptions = { port: 0, memory: true };
export type Url = RunningServer['url'];
`,
    );
    writeFileSync(
      join(app, 'check-cjs.cts'),
      `import runtime = require('in-app-runtime');
const client: runtime.Client = runtime.createClient({ baseUrl: 'http://127.0.0.1:8080', appId: 1 });
export = client;
`,
    );
    const base = { strict: true, target: 'ES2022', lib: ['ES2022', 'DOM'], types: [], noEmit: true, skipLibCheck: false };
    writeFileSync(
      join(app, 'tsconfig.node16.json'),
      JSON.stringify({ compilerOptions: { ...base, module: 'node16', moduleResolution: 'node16' }, files: ['check.ts', 'check-cjs.cts'] }),
    );
    // The node16 run also checks the package's own .d.ts files (skipLibCheck: false); the bundler run, only resolution and use.
    writeFileSync(
      join(app, 'tsconfig.bundler.json'),
      JSON.stringify({ compilerOptions: { ...base, skipLibCheck: true, module: 'esnext', moduleResolution: 'bundler' }, files: ['check.ts'] }),
    );
    for (const config of ['tsconfig.node16.json', 'tsconfig.bundler.json']) expect(node(TSC, '-p', config), config).toBe('');
  }, 60_000);

  it('in-app-runtime/server fails with the npm install command for the server packages', () => {
    const out = node(
      '--input-type=module',
      '-e',
      `await import('in-app-runtime/server').then(
         () => console.log(JSON.stringify({ loaded: true })),
         (error) => console.log(JSON.stringify({ message: error.message, code: error.code })),
       );`,
    );
    // The message with every server package missing (its exact text: test/unit/server-dependencies.test.ts).
    const expected = missingPackagesError('in-app-runtime/server', ['hono', '@hono/node-server', 'mingo', 'cron-parser', 'better-sqlite3', 'web-push']);
    expect(expected.message).toMatch(/^in-app-runtime\/server needs: npm install hono@4\.13\.19 @hono\/node-server@1\.19\.19 mingo@/);
    expect(JSON.parse(out)).toEqual({ code: 'ERR_IAR_MISSING_PACKAGES', message: expected.message });
  });
});
