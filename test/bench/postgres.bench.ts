import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import pg from 'pg';
import type { Database } from '../../src/server/db/database.js';
import { openPostgres } from '../../src/server/db/postgres.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { createClient } from '../../src/index.js';
import { startPostgresCluster, type PostgresCluster } from '../helpers/postgres.js';

/**
 * PostgreSQL (issue 9): queued-run throughput with one vs three backend
 * instances on one database (and one SQLite instance for reference), and
 * query/commit latency of the data-access layer on PostgreSQL vs SQLite.
 * The instances run in this one process (2 cores), so three instances share
 * one event loop: the comparison shows what sharing the queue costs or gains,
 * not what three machines would do.
 */

const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function createDatabase(cluster: PostgresCluster, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(cluster.url);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Queues `runs` runs of one action spread over the instances; ms until every run has finished. */
async function queuedRuns(options: { instances: number; databaseUrl?: string; runs: number; slowUrl?: string }): Promise<number> {
  const servers: RunningServer[] = [];
  // SQLite: a data folder, so the probe can read the same database file.
  const dataDir = options.databaseUrl ? undefined : mkdtempSync(join(tmpdir(), 'iar-bench-'));
  for (let i = 0; i < options.instances; i++)
    servers.push(await startServer({ memory: !dataDir, dataDir, log: false, databaseUrl: options.databaseUrl, limits: { runsPerMinute: 1_000_000 } }));
  const probe = openProbe(options.databaseUrl ?? join(dataDir!, 'runtime.sqlite'));
  try {
    const { appId, organizationId, apiToken } = servers[0]!.bootstrap;
    const client = createClient({ baseUrl: servers[0]!.url, appId, organizationId, authToken: apiToken });
    const functions = options.slowUrl
      ? [fn('http-request', { url: options.slowUrl }), fn('return', { value: '{{ n }}' })]
      : [fn('return', { value: '{{ n }}' })];
    const action = await client.App.Actions.create({ name: 'work', environment: 'server', functions });
    await client.App.Actions.publish(action.id, true);
    const started = performance.now();
    const fire = async (n: number) => {
      const res = await fetch(`${servers[n % servers.length]!.url}/v1/apps/${appId}/tasks/work/run`, {
        method: 'POST',
        headers: { 'Auth-token': apiToken, 'Content-Type': 'application/json' },
        body: JSON.stringify({ payload: { n } }),
      });
      if (res.status !== 202) throw new Error(`run refused: ${res.status}`);
    };
    for (let n = 0; n < options.runs; n += 20) await Promise.all(Array.from({ length: Math.min(20, options.runs - n) }, (_, k) => fire(n + k)));
    for (;;) {
      const done = await probe.finished();
      if (done >= options.runs) break;
      await sleep(5);
    }
    return performance.now() - started;
  } finally {
    for (const s of servers) await s.close();
    await probe.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Counts finished runs through a connection of its own. */
function openProbe(target: string): { finished(): Promise<number>; close(): Promise<void> } {
  const db = target.startsWith('postgres') ? openPostgres({ url: target, max: 1 }) : openSqlite({ file: target });
  return {
    finished: async () => (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM action_runs WHERE status IN ('succeeded', 'failed')"))!.n,
    close: () => db.close(),
  };
}

/** Median µs of `op` over `n` calls after a warm-up. */
async function latency(n: number, op: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await op(-1 - i);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op(i);
    times.push((performance.now() - t) * 1000);
  }
  return median(times);
}

async function dalLatency(db: Database): Promise<Record<string, number>> {
  await db.run('CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, name TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL)');
  for (let i = 0; i < 1000; i++)
    await db.run('INSERT INTO bench_rows (name, data, created_at) VALUES (?, ?, ?)', [`row${i}`, '{"a":1}', new Date().toISOString()]);
  const read = await latency(2000, (i) => db.get('SELECT id, name AS rowName, data FROM bench_rows WHERE id = ?', [(Math.abs(i) % 1000) + 1]));
  const insert = await latency(1000, (i) =>
    db.get('INSERT INTO bench_rows (name, data, created_at) VALUES (?, ?, ?) RETURNING id', [`i${i}`, '{"b":2}', '2030-01-01T00:00:00Z']),
  );
  const tx = await latency(300, (i) =>
    db.transaction(async (t) => {
      for (let k = 0; k < 10; k++)
        await t.run('INSERT INTO bench_rows (name, data, created_at) VALUES (?, ?, ?)', [`t${i}-${k}`, '{}', '2030-01-01T00:00:00Z']);
      await t.run('UPDATE bench_rows SET data = ? WHERE id = ?', ['{"c":3}', 1]);
    }),
  );
  return { 'point read (SELECT … WHERE id = ?)': read, 'insert … RETURNING id (autocommit)': insert, 'transaction: 10 inserts + 1 update, commit': tx };
}

it('PostgreSQL: queued-run throughput (1 vs 3 instances) and DAL latency vs SQLite', async () => {
  const cluster = await startPostgresCluster();
  let slow: Server | undefined;
  try {
    slow = createServer((_req, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 20));
    await new Promise<void>((r) => slow!.listen(0, '127.0.0.1', r));
    const slowUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}/`;
    const RUNS = Number(process.env.BENCH_RUNS ?? 300);

    const throughput: { case: string; ms: number; 'runs/s': number; 'x 1 PG instance': number }[] = [];
    for (const kind of ['cpu', 'io'] as const) {
      const slowArg = kind === 'io' ? slowUrl : undefined;
      const one = await queuedRuns({ instances: 1, databaseUrl: await createDatabase(cluster, `bench_${kind}_1`), runs: RUNS, slowUrl: slowArg });
      const three = await queuedRuns({ instances: 3, databaseUrl: await createDatabase(cluster, `bench_${kind}_3`), runs: RUNS, slowUrl: slowArg });
      const sqlite = await queuedRuns({ instances: 1, runs: RUNS, slowUrl: slowArg });
      const label = kind === 'cpu' ? `${RUNS} runs (return a value)` : `${RUNS} runs (20 ms HTTP call each)`;
      for (const [name, ms] of [
        [`${label}, 1 PostgreSQL instance`, one],
        [`${label}, 3 PostgreSQL instances`, three],
        [`${label}, 1 SQLite instance`, sqlite],
      ] as const)
        throughput.push({ case: name, ms: Math.round(ms), 'runs/s': Math.round((RUNS / ms) * 1000), 'x 1 PG instance': Number((one / ms).toFixed(2)) });
    }
    console.log('\nPostgreSQL: queued-run throughput (higher runs/s and ratio are better)');
    console.table(throughput);

    const pgDb = openPostgres({ url: await createDatabase(cluster, 'bench_latency') });
    const sqliteDb = openSqlite({ memory: true });
    const onPg = await dalLatency(pgDb);
    const onSqlite = await dalLatency(sqliteDb);
    await pgDb.close();
    await sqliteDb.close();
    const rows = Object.keys(onPg).map((op) => ({
      operation: op,
      'PostgreSQL µs': Math.round(onPg[op]!),
      'SQLite µs': Math.round(onSqlite[op]!),
      'x SQLite': Number((onPg[op]! / onSqlite[op]!).toFixed(1)),
    }));
    console.log('\nPostgreSQL vs SQLite: data-access layer latency (median)');
    console.table(rows);
    expect(throughput).toHaveLength(6);
    expect(rows).toHaveLength(3);
  } finally {
    await new Promise<void>((r) => (slow ? slow.close(() => r()) : r()));
    cluster.stop();
  }
}, 600_000);
