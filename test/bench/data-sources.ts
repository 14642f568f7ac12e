/**
 * Data source benchmarks (run by `npm run bench` through test/bench/data-sources.bench.ts, or imported by a
 * runner): each case is measured over HTTP against the real in-process backend and compared with a bare
 * better-sqlite3 baseline doing the same work on the same rows in the same run.
 */
import BetterSqlite3 from 'better-sqlite3';
import { startServer } from '../../src/server/index.js';

export interface BenchRow {
  case: string;
  ms: number;
  baselineMs?: number;
  ratio?: number;
}

const CITIES = ['Cork', 'Oslo', 'Lima', 'Kyiv', 'Pune', 'Nice', 'Bern', 'Riga'];

function rows(count: number, seed = 1): Record<string, unknown>[] {
  let x = seed;
  const rand = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
  return Array.from({ length: count }, (_, i) => ({
    name: `Person ${i}`,
    email: `person${i}@example.com`,
    age: Math.floor(rand() * 90),
    score: Math.round(rand() * 100000) / 100,
    city: CITIES[i % CITIES.length],
    active: i % 3 !== 0,
  }));
}

/** Median time of `fn` over `runs` runs, after one warm-up run; `prepare` runs untimed before each. */
async function median<T>(runs: number, fn: (prepared: T) => Promise<void> | void, prepare?: () => Promise<T> | T): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const prepared = (await prepare?.()) as T;
    const start = performance.now();
    await fn(prepared);
    if (i > 0) times.push(performance.now() - start);
  }
  if (process.env.BENCH_DEBUG) console.log(times.map((t) => t.toFixed(1)).join(' '));
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

function bareDb(data: Record<string, unknown>[]) {
  const db = new BetterSqlite3(':memory:');
  db.exec(
    'CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, data_source_id INTEGER NOT NULL, data TEXT NOT NULL, sort_order INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)',
  );
  db.exec('CREATE INDEX entries_ds ON entries (data_source_id, id)');
  const insert = db.prepare('INSERT INTO entries (data_source_id, data, sort_order, created_at, updated_at) VALUES (?, ?, ?, ?, ?)');
  const fill = (ds: number, items: Record<string, unknown>[]) =>
    db.transaction(() => {
      const now = new Date().toISOString();
      items.forEach((d, i) => insert.run(ds, JSON.stringify(d), i, now, now));
    })();
  if (data.length) fill(1, data);
  return { db, fill };
}

const pct = (ms: number) => Math.round(ms * 10) / 10;

export async function run(): Promise<{ name: string; rows: BenchRow[] }> {
  // 100,000 rows are ~12 MB of JSON: above the default 10 MB body limit.
  const server = await startServer({ port: 0, memory: true, log: false, limits: { bodyBytes: 64 * 1024 * 1024 } });
  const token = server.bootstrap.apiToken;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { 'Auth-token': token, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const create = async (name: string) => (await call('POST', `/v1/data-sources?appId=${server.bootstrap.appId}`, { name })).dataSource.id as number;
  const out: BenchRow[] = [];
  try {
    // 1. Query with where + order + limit over 100,000 entries.
    const big = rows(100_000);
    const dsId = await create('bench-query');
    await call('POST', `/v1/data-sources/${dsId}/data`, { entries: big });
    const query = { where: { age: { $gte: 30 }, city: { $in: ['Cork', 'Oslo', 'Lima'] } }, order: [['data.score', 'DESC']], limit: 20 };
    await call('POST', `/v1/data-sources/${dsId}/data/query`, query); // first read parses into the cache
    const queryMs = await median(15, async () => {
      const result = await call('POST', `/v1/data-sources/${dsId}/data/query`, query);
      if (result.entries.length !== 20) throw new Error('unexpected query result');
    });
    const bare = bareDb(big);
    const scan = bare.db.prepare(
      `SELECT id, data FROM entries WHERE data_source_id = 1 AND json_extract(data, '$.age') >= 30
       AND json_extract(data, '$.city') IN ('Cork', 'Oslo', 'Lima') ORDER BY json_extract(data, '$.score') DESC LIMIT 20`,
    );
    const scanMs = await median(15, () => {
      const result = scan.all();
      if (result.length !== 20) throw new Error('unexpected scan result');
    });
    out.push({
      case: 'query where+order+limit, 100,000 entries (HTTP) vs bare SQLite json_extract scan',
      ms: pct(queryMs),
      baselineMs: pct(scanMs),
      ratio: pct(queryMs / scanMs),
    });

    // 2. Commit of 10,000 entries (inserts, one transaction).
    const tenK = rows(10_000, 7).map((data) => ({ data }));
    let n = 0;
    const commitMs = await median(
      5,
      async (id: number) => {
        await call('POST', `/v1/data-sources/${id}/commit`, { entries: tenK, returnEntries: false });
      },
      () => create(`bench-commit-${n++}`),
    );
    let dsn = 10;
    const plainTen = tenK.map((e) => e.data);
    const insertTenMs = await median(5, () => bare.fill(dsn++, plainTen));
    out.push({
      case: 'commit of 10,000 entries (HTTP) vs bare SQLite insert of the rows',
      ms: pct(commitMs),
      baselineMs: pct(insertTenMs),
      ratio: pct(commitMs / insertTenMs),
    });

    // 3. Import of 100,000 entries (replace).
    const importMs = await median(
      3,
      async (id: number) => {
        await call('POST', `/v1/data-sources/${id}/data`, { entries: big });
      },
      () => create(`bench-import-${n++}`),
    );
    const insertBigMs = await median(3, () => bare.fill(dsn++, big));
    out.push({
      case: 'import of 100,000 entries (HTTP) vs bare SQLite insert of the rows',
      ms: pct(importMs),
      baselineMs: pct(insertBigMs),
      ratio: pct(importMs / insertBigMs),
    });
    bare.db.close();
  } finally {
    await server.close();
  }
  return { name: 'Data sources', rows: out };
}
