import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The built backend (`npm run build`) runs the budgeted SQLite reads of a database file on its reader threads
 * from dist/server/sqlite-reader-thread.mjs, in a plain Node process (no vitest, no TypeScript loader): another
 * app's plain select answers while a slow aggregation runs, the slow one answers 422 at its budget, and after
 * `close()` the process ends by itself (no thread left running: the script has nothing else to wait for).
 */
const ROOT = resolve(__dirname, '../..');

const script = (dataDir: string) => `
const { startServer } = await import(${JSON.stringify(join(ROOT, 'dist/server.mjs'))});
const server = await startServer({ port: 0, dataDir: ${JSON.stringify(dataDir)}, log: false, limits: { aggregateTimeoutMs: 4000 } });
const other = await server.createOrganization('Other');
const api = async (token, path, json) => {
  const res = await fetch(server.url + path, { method: 'POST', headers: { 'Auth-token': token, 'Content-Type': 'application/json' }, body: JSON.stringify(json) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};
const create = async (boot, name, entries) => {
  const ds = (await api(boot.apiToken, '/v1/data-sources?appId=' + boot.appId, { name })).body.dataSource.id;
  await api(boot.apiToken, '/v1/data-sources/' + ds + '/data', { entries });
  return ds;
};
const tags = Array.from({ length: 100 }, (_, j) => j);
const slow = await create(server.bootstrap, 'Slow', Array.from({ length: 2000 }, (_, i) => ({ k: i % 7, tags })));
const plain = await create(other, 'Plain', [{ city: 'Oslo' }, { city: 'Bergen' }]);
const done = [];
const where = { $or: Array.from({ length: 200 }, (_, i) => ({ tags: 'x' + i })) };
const late = api(server.bootstrap.apiToken, '/v1/data-sources/' + slow + '/data/query', { where, aggregate: [{ $group: { _id: '$data.k', n: { $sum: 1 } } }] })
  .then((r) => (done.push('slow'), r));
await new Promise((r) => setTimeout(r, 300));
const select = await api(other.apiToken, '/v1/data-sources/' + plain + '/data/query', { where: { city: 'Oslo' } });
done.push('plain');
const slowAnswer = await late;
await server.close();
console.log(JSON.stringify({ done, plain: select.body.entries.map((e) => e.data), slow: slowAnswer.body.error && slowAnswer.body.error.code }));
`;

describe('the built backend runs SQLite reads on its reader threads', () => {
  it('dist/server/sqlite-reader-thread.mjs serves reads; a slow one leaves the others answering; close() ends them', () => {
    // Fail (not skip) without a build: this test is about the built files.
    for (const file of ['dist/server.mjs', 'dist/server/sqlite-reader-thread.mjs'])
      expect(existsSync(join(ROOT, file)), `${file} (run \`npm run build\`)`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'iar-built-readers-'));
    try {
      // The timeout fails the test if the process does not end after close() (a thread left running).
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script(dir)], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
      const result = JSON.parse(out.trim().split('\n').pop()!) as { done: string[]; plain: unknown[]; slow: string };
      expect(result.plain).toEqual([{ city: 'Oslo' }]);
      expect(result.slow).toBe('QUERY_TIMEOUT');
      expect(result.done).toEqual(['plain', 'slow']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
