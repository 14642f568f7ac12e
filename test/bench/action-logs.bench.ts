/**
 * getLogs over an app's many records (logs are never pruned): the reference backend with 100,000 device run
 * records of one app (and 100,000 of another app beside them), read over HTTP: a page of 10 newest first (its
 * answer has the count of all), a page of one action's records, and a `where` that reads every record for its count
 * (under limits.aggregateTimeoutMs). Baseline in the same run: bare SQLite (better-sqlite3, in memory) with the
 * same rows in a table indexed for the page, its page of 10 and its count.
 */
import BetterSqlite3 from 'better-sqlite3';
import { loadavg } from 'node:os';
import { afterAll, beforeAll, test } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const PER_APP = 100_000;
const trace = Array.from({ length: 8 }, (_, i) => ({ functionName: 'set', output: { i, text: 'x'.repeat(100) } }));
const at = Date.parse('2026-03-01T00:00:00Z');
const record = (n: number, actionId: number, app: number) => ({
  deviceKey: `device-run-${app}-${n}`,
  type: 'app.action.completed',
  createdAt: new Date(at + n * 1000).toISOString(),
  data: { mode: 'on-demand', duration: 1, actionId, result: n, trace },
});

let b: TestBackend;
let apps: { appId: number; token: string; actions: number[] }[] = [];
beforeAll(async () => {
  b = await startTestBackend({ limits: { aggregateTimeoutMs: 60_000 } });
  const other = await b.server.createOrganization('other');
  apps = [
    { appId: b.server.bootstrap.appId, token: b.server.bootstrap.apiToken, actions: [] },
    { appId: other.appId, token: other.apiToken, actions: [] },
  ];
  for (const app of apps)
    for (let a = 0; a < 5; a++) {
      const r = await b.api('POST', `/v1/apps/${app.appId}/tasks`, { token: app.token, json: { name: `a${a}`, environment: 'client', functions: [] } });
      app.actions.push(r.body.action.id);
    }
  for (let from = 0; from < PER_APP; from += 500)
    for (const [i, app] of apps.entries()) {
      const logs = Array.from({ length: 500 }, (_, k) => record(from + k, app.actions[(from + k) % 5]!, i));
      const r = await b.api('POST', `/v1/apps/${app.appId}/tasks/logs`, { token: app.token, json: { logs } });
      if (r.status !== 201) throw new Error(`upload: ${r.status} ${JSON.stringify(r.body)}`);
    }
}, 600_000);
afterAll(() => b?.close());

/** Median ms of `runs` calls after one warm-up. */
async function median(fn: () => Promise<unknown>, runs = 7): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return times.sort((x, y) => x - y)[runs >> 1]!;
}

test('getLogs over 100,000 records of an app', async () => {
  const [app] = apps;
  const read = (query: string) => async () => {
    const r = await b.api('GET', `/v1/apps/${app!.appId}/tasks/logs?${query}`, { token: app!.token });
    if (r.status !== 200) throw new Error(`getLogs: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const where = encodeURIComponent(JSON.stringify({ 'data.result': { $gte: PER_APP - 5 } }));
  const found = (await read(`limit=10&where=${where}`)()) as { count: number };
  if (found.count !== 5) throw new Error(`where counted ${found.count}`);

  const bare = new BetterSqlite3(':memory:');
  bare.exec('CREATE TABLE logs (id INTEGER PRIMARY KEY, app_id INTEGER, action_id INTEGER, type TEXT, data TEXT, created_at TEXT)');
  bare.exec('CREATE INDEX logs_page ON logs (app_id, created_at, id)');
  const put = bare.prepare('INSERT INTO logs (app_id, action_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)');
  bare.transaction(() => {
    for (let n = 0; n < PER_APP; n++)
      for (const app of [1, 2]) {
        const r = record(n, 1 + (n % 5), app);
        put.run(app, 1 + (n % 5), r.type, JSON.stringify(r.data), r.createdAt);
      }
  })();
  const barePage = bare.prepare(
    "SELECT id, type, json_remove(data, '$.trace') AS data, created_at FROM logs WHERE app_id = 1 ORDER BY created_at DESC, id DESC LIMIT 10",
  );
  const bareCount = bare.prepare('SELECT COUNT(*) AS n FROM logs WHERE app_id = 1');

  const rows = [
    { measurement: 'page of 10, newest first, with the count', ms: await median(read('limit=10')) },
    { measurement: "page of 10 of one action's records, with its count", ms: await median(read(`limit=10&id=${app!.actions[2]}`)) },
    { measurement: 'where (5 of 100,000 match): every record read for the count', ms: await median(read(`limit=10&where=${where}`), 3) },
    { measurement: 'bare SQLite: page of 10 (index in page order)', ms: await median(async () => barePage.all()) },
    { measurement: 'bare SQLite: count of the app', ms: await median(async () => bareCount.get()) },
  ];
  bare.close();
  console.log(
    `\ngetLogs, ${PER_APP} records of the app and as many of another (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')})\n`,
  );
  console.table(rows.map((r) => ({ measurement: r.measurement, 'median ms': +r.ms.toFixed(2) })));
}, 600_000);
