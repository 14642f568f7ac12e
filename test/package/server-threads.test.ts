import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The built backend (`npm run build`: dist/server.mjs, its chunks in dist/server/) runs server runs on its
 * thread pool from dist/server/run-thread.mjs, in a plain Node process (no vitest, no TypeScript loader): a
 * spinning run does not delay API requests, and another run gets the second thread. The repo's node_modules
 * hold the server's packages (optional peers: the packed tarball installs none of them, see install.test.ts).
 */
const ROOT = resolve(__dirname, '../..');

const SCRIPT = `
const { startServer } = await import(${JSON.stringify(join(ROOT, 'dist/server.mjs'))});
const server = await startServer({ port: 0, memory: true, log: false, limits: { runTimeoutMs: 4000, runThreads: 2, appConcurrency: 2 } });
const { appId, apiToken } = server.bootstrap;
const api = async (method, path, json) => {
  const res = await fetch(server.url + path, { method, headers: { 'Auth-token': apiToken, 'Content-Type': 'application/json' }, body: json && JSON.stringify(json) });
  return { status: res.status, body: await res.json() };
};
const action = async (name, code) => {
  const { body } = await api('POST', '/v1/apps/' + appId + '/tasks', { name, functions: [{ functionPackage: 'com.client.function.script', settings: { code } }] });
  await api('POST', '/v1/apps/' + appId + '/tasks/' + body.action.id + '/publish', { publish: true });
};
await action('spin', 'while (true) {}');
await action('six', 'return 6 * 7');
const spinning = api('POST', '/v1/apps/' + appId + '/tasks/spin/run', { wait: true });
await new Promise((r) => setTimeout(r, 1500));
let slowestGetMs = 0;
for (let i = 0; i < 10; i++) {
  const t = performance.now();
  await api('GET', '/v1/apps/' + appId + '/tasks/spin');
  slowestGetMs = Math.max(slowestGetMs, performance.now() - t);
}
const six = await api('POST', '/v1/apps/' + appId + '/tasks/six/run', { wait: true });
const spun = await spinning;
await server.close();
console.log(JSON.stringify({ slowestGetMs, six: six.body.result, spin: spun.body.error && spun.body.error.code }));
`;

describe('the built backend runs server runs on its threads', () => {
  it('dist/server/run-thread.mjs serves runs; a spinning run leaves the API answering', () => {
    // Fail (not skip) without a build: this test is about the built files.
    for (const file of ['dist/server.mjs', 'dist/server/run-thread.mjs']) expect(existsSync(join(ROOT, file)), `${file} (run \`npm run build\`)`).toBe(true);
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    const result = JSON.parse(out.trim().split('\n').pop()!) as { slowestGetMs: number; six: number; spin: string };
    expect(result.six).toBe(42);
    expect(result.spin).toBe('TIMEOUT');
    // Generous for a loaded machine; inline, a GET would wait for the run (4 s).
    expect(result.slowestGetMs).toBeLessThan(1000);
  }, 90_000);
});
