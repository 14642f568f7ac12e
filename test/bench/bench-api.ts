import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { type RunningServer, type ServerOptions, startServer } from '../../src/server/index.js';

/**
 * The JSON API client the SQL benches share: `server()` is read at each call, because they restart the server on
 * the same port (a fresh one, nothing cached) after writing rows straight into its database.
 */
export function benchApi(server: () => { url: string }, apiToken: string) {
  return async (method: string, path: string, body?: unknown) => {
    const url = server().url + path;
    const init = {
      method,
      headers: { 'Auth-token': apiToken, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    };
    // A keep-alive socket of the first server (same port after the restart) is reset once: retry.
    const res = await fetch(url, init).catch(() => fetch(url, init));
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : undefined;
  };
}

/** Writes `n` entries of data source `ds` straight into an SQLite file (one transaction, a second apart), as a bulk import would leave them. */
export function writeRows(db: BetterSqlite3.Database, ds: number, n: number, row: (i: number) => unknown): void {
  const put = db.prepare('INSERT INTO data_source_entries (data_source_id, data, sort_order, created_at, updated_at) VALUES (?, ?, ?, ?, ?)');
  const t0 = Date.parse('2024-01-01T00:00:00.000Z');
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const at = new Date(t0 + i * 1000).toISOString();
      put.run(ds, JSON.stringify(row(i)), i, at, at);
    }
  })();
  db.prepare('UPDATE data_sources SET data_version = data_version + 1 WHERE id = ?').run(ds);
}

/** Makes the benches' data source "Bench" on a server of `options`, then closes it: rows are written straight into its database next. */
export async function benchDataSource(options: ServerOptions): Promise<{ ds: number; appId: number; apiToken: string }> {
  const server = await startServer(options);
  try {
    const { appId, apiToken } = server.bootstrap;
    const answer = await benchApi(() => server, apiToken)('POST', `/v1/data-sources?appId=${appId}`, { name: 'Bench' });
    return { ds: answer.dataSource.id as number, appId, apiToken };
  } finally {
    await server.close();
  }
}

/** The cities of the benches' generated people. */
export const BENCH_CITIES = ['Cork', 'Oslo', 'Lima', 'Kyiv', 'Pune', 'Nice', 'Bern', 'Riga'];

/** The benches' generated person `i` (what writeRows writes). */
export const benchRow = (i: number) => ({
  name: `Person ${i}`,
  email: `person${i}@example.com`,
  age: i % 90,
  city: BENCH_CITIES[i % BENCH_CITIES.length],
  active: i % 3 !== 0,
});

/** The median time (ms) of `runs` runs of `fn` after one warm-up run. */
export async function medianMs(runs: number, fn: () => Promise<void> | void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t = performance.now();
    await fn();
    if (i > 0) times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

/**
 * A SQLite file server of `options` (its `dataDir`) holding `n` entries of `row` in the data source "Bench": the
 * rows are written straight into the file (`afterWrite` may read it before it closes), then a fresh server starts
 * (nothing cached). The caller closes `server`.
 */
export async function loadedBenchServer(
  options: ServerOptions & { dataDir: string },
  n: number,
  row: (i: number) => unknown,
  afterWrite?: (db: BetterSqlite3.Database, ds: number) => void,
): Promise<{ ds: number; appId: number; apiToken: string; file: string; server: RunningServer; api: ReturnType<typeof benchApi> }> {
  const { ds, appId, apiToken } = await benchDataSource(options);
  const file = join(options.dataDir, 'runtime.sqlite');
  const load = new BetterSqlite3(file);
  try {
    writeRows(load, ds, n, row);
    afterWrite?.(load, ds);
  } finally {
    load.close();
  }
  const server = await startServer(options);
  return { ds, appId, apiToken, file, server, api: benchApi(() => server, apiToken) };
}

/**
 * `n` rows of benchRow's shape (`city` from BENCH_CITIES) written straight into a PostgreSQL data source by one
 * `generate_series` statement, then its data version bumped (nothing cached is stale) and the table analyzed.
 */
export async function insertPostgresBenchRows(db: { query(sql: string): Promise<unknown> }, ds: number, n: number): Promise<void> {
  const cities = `ARRAY[${BENCH_CITIES.map((c) => `'${c}'`).join(', ')}]`;
  await db.query(
    `INSERT INTO data_source_entries (data_source_id, data, sort_order, created_at, updated_at)
     SELECT ${ds}, json_build_object('name', 'Person ' || i, 'email', 'person' || i || '@example.com', 'age', i % 90, 'city', (${cities})[i % ${BENCH_CITIES.length} + 1], 'active', i % 3 <> 0)::text,
            i, t, t
     FROM generate_series(0, ${n - 1}) i, LATERAL (SELECT to_char(timestamp '2024-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t) s`,
  );
  await db.query(`UPDATE data_sources SET data_version = data_version + 1 WHERE id = ${ds}`);
  await db.query('VACUUM ANALYZE data_source_entries');
}
