import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { aggregateStatement } from '../../src/server/data-sources/sql/aggregate.js';
import { planSqlAggregate } from '../../src/server/data-sources/sql/aggregate-plan.js';
import { planSqlSelect, selectStatement } from '../../src/server/data-sources/sql/select.js';
import type { SqlValue } from '../../src/server/db/database.js';
import { openPostgres } from '../../src/server/db/postgres.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { SQLITE_BUDGET_FUNCTION, sqliteBudgetCheck } from '../../src/server/db/statement-budget.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { startClusterWithDatabase } from '../helpers/postgres.js';

/**
 * Time budgets of SQL reads (docs/data-sources.md "Time budgets", docs/benchmarks.md): on each engine, a plain
 * select over HTTP alone, and issued 100 ms after a pathological aggregation (a `where` of 200 array walks over
 * 2,000 entries of 100-element arrays: seconds to minutes unbounded) that the budget stops; the plain select's
 * statement on a bare connection is the baseline. SQLite twice: reads on the reader threads (the default on a
 * database file, db/sqlite-readers/) and on the main thread (`limits.sqliteReadThreads: 0`). Then what the budget costs: on SQLite the check term in a
 * scan (bare better-sqlite3, 300,000 rows: the translator's statements with the term, without it, and with a
 * call on every row), on PostgreSQL the transaction around a read (the adapter, `SELECT 1`).
 */
const RUNS = 7;
const BUDGET_MS = 2000;
const CITIES = ['Cork', 'Oslo', 'Lima', 'Kyiv', 'Pune', 'Nice', 'Bern', 'Riga'];
const slowWhere = { $or: Array.from({ length: 200 }, (_, i) => ({ tags: `x${i}` })) };
const slowBody = { where: slowWhere, aggregate: [{ $group: { _id: '$data.k', n: { $sum: 1 } } }] };
const plainBody = { where: { city: 'Oslo' }, limit: 20 };

/** The client of `beside` (a worker thread): the plain select alone, then each time 100 ms after the slow one. */
const CLIENT = `
const { parentPort, workerData: w } = require('node:worker_threads');
const post = async ([path, body]) => {
  const res = await fetch(w.url + path, { method: 'POST', headers: w.headers, body: JSON.stringify(body) });
  await res.text();
  return res.status;
};
const timed = async (fn) => { const t = performance.now(); const status = await fn(); return [performance.now() - t, status]; };
(async () => {
  const alone = [];
  for (let i = 0; i < 3 * w.runs; i++) alone.push((await timed(() => post(w.plain)))[0]);
  const besideMs = [], slowMs = [], statuses = [];
  for (let i = 0; i < w.runs; i++) {
    const t = performance.now();
    const late = post(w.slow).then((status) => { slowMs.push(performance.now() - t); return status; });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const [ms, status] = await timed(() => post(w.plain));
    besideMs.push(ms);
    statuses.push([status, await late]);
  }
  parentPort.postMessage({ alone, besideMs, slowMs, statuses });
})();
`;

const median = (times: number[]) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** Requests over HTTP with their status (the slow one answers 422). */
function client(server: RunningServer) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { 'Auth-token': server.bootstrap.apiToken, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as any };
  };
}

/** Plain select alone, then beside the slow aggregation; returns table rows. */
async function beside(server: RunningServer, bare: () => Promise<unknown>, engine: string): Promise<string[]> {
  const api = client(server);
  const create = async (name: string) => (await api('POST', `/v1/data-sources?appId=${server.bootstrap.appId}`, { name })).body.dataSource.id as number;
  const slow = await create('Slow');
  const tags = Array.from({ length: 100 }, (_, j) => j);
  expect((await api('POST', `/v1/data-sources/${slow}/data`, { entries: Array.from({ length: 2000 }, (_, i) => ({ k: i % 7, tags })) })).status).toBe(200);
  const plain = await create('Plain');
  const rows = Array.from({ length: 1000 }, (_, i) => ({ name: `P${i}`, city: CITIES[i % 8], age: i % 90 }));
  expect((await api('POST', `/v1/data-sources/${plain}/data`, { entries: rows })).status).toBe(200);
  const plainQuery = async () => {
    const r = await api('POST', `/v1/data-sources/${plain}/data/query`, plainBody);
    expect(r.status).toBe(200);
    expect(r.body.entries).toHaveLength(20);
  };
  await plainQuery();
  const bareMs: number[] = [];
  for (let i = 0; i < 3 * RUNS; i++) bareMs.push(await timed(bare));
  // The client runs in a worker thread: on the main-thread path a SQLite statement holds the server's thread (this
  // one), and a client here could not even start its request (nor its 100 ms timer) before the statement ended.
  const headers = { 'Auth-token': server.bootstrap.apiToken, 'Content-Type': 'application/json' };
  const worker = new Worker(CLIENT, {
    eval: true,
    workerData: {
      url: server.url,
      headers,
      runs: RUNS,
      plain: [`/v1/data-sources/${plain}/data/query`, plainBody],
      slow: [`/v1/data-sources/${slow}/data/query`, slowBody],
    },
  });
  const { alone, besideMs, slowMs, statuses } = await new Promise<{ alone: number[]; besideMs: number[]; slowMs: number[]; statuses: number[][] }>(
    (resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    },
  );
  await worker.terminate();
  expect(statuses).toEqual(Array.from({ length: RUNS }, () => [200, 422]));
  return [
    `| ${engine} | ${median(bareMs).toFixed(1)} ms | ${median(alone).toFixed(1)} ms | ${median(besideMs).toFixed(1)} ms (max ${Math.max(...besideMs).toFixed(0)}) | ${(median(besideMs) - median(alone)).toFixed(1)} ms | ${median(slowMs).toFixed(0)} ms (max ${Math.max(...slowMs).toFixed(0)}) |`,
  ];
}

/**
 * A read's cost on a reader thread against the same read on the main thread (Database.bounded, the plain select's
 * statement), and the statement on a bare connection: the messages to and from the thread and the read
 * transaction around the statement.
 */
async function readCost(file: string, statement: { text: string; params: readonly SqlValue[] }): Promise<string[]> {
  const main = openSqlite({ file });
  const threaded = openSqlite({ file });
  const bare = new BetterSqlite3(file, { readonly: true });
  bare.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => 1);
  try {
    await threaded.startReaders(1);
    const params = statement.params;
    const prepared = bare.prepare(statement.text);
    const times: number[][] = [[], [], []];
    for (let i = 0; i < 310; i++) {
      const runs = [
        async () => prepared.all(...params),
        () => main.bounded(BUDGET_MS, (q) => q.all(statement.text, params)),
        () => threaded.bounded(BUDGET_MS, (q) => q.all(statement.text, params)),
      ];
      for (const [k, run] of runs.entries()) {
        const ms = await timed(run);
        if (i >= 10) times[k]!.push(ms);
      }
    }
    const [b, m, t] = times.map(median) as [number, number, number];
    return [`| ${b.toFixed(2)} ms | ${m.toFixed(2)} ms | ${t.toFixed(2)} ms (+${(t - m).toFixed(2)} ms) |`];
  } finally {
    bare.close();
    await main.close();
    await threaded.close();
  }
}

const header = [
  `| engine | plain select, bare statement | plain select over HTTP, alone | the same 100 ms into a slow aggregation | difference | slow aggregation: 422 after (budget ${BUDGET_MS} ms) |`,
  '| --- | --- | --- | --- | --- | --- |',
];

it('a plain select beside a slow aggregation, and the check term (SQLite)', async () => {
  // The reads on the reader threads (the default on a database file) and, for comparison, on the main thread.
  const lines: string[] = [];
  const hopLines: string[] = [];
  for (const [engine, sqliteReadThreads] of [
    ['SQLite, reader threads (default, 2)', 2],
    ['SQLite, main thread (`sqliteReadThreads: 0`)', 0],
  ] as const) {
    const dir = mkdtempSync(join(tmpdir(), 'iar-budgetbench-'));
    const server = await startServer({ port: 0, dataDir: dir, log: false, limits: { aggregateTimeoutMs: BUDGET_MS, sqliteReadThreads } });
    let bare: BetterSqlite3.Database | undefined;
    let ds: number | undefined;
    try {
      // The bare baseline: the translator's statement of the plain select on its own connection to the same file.
      const plan = planSqlSelect(compileQuery(plainBody))!;
      lines.push(
        ...(await beside(
          server,
          async () => {
            if (!bare) {
              bare = new BetterSqlite3(join(dir, 'runtime.sqlite'), { readonly: true });
              bare.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => 1);
            }
            ds ??= (bare.prepare("SELECT id FROM data_sources WHERE name = 'Plain'").get() as { id: number }).id;
            const statement = selectStatement('sqlite', ds, plan);
            expect(bare.prepare(statement.text).all(...statement.params)).toHaveLength(20);
          },
          engine,
        )),
      );
      if (sqliteReadThreads > 0) hopLines.push(...(await readCost(join(dir, 'runtime.sqlite'), selectStatement('sqlite', ds!, plan))));
    } finally {
      bare?.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  // The check term's cost: 300,000 rows in a bare database, the translator's scans with and without it.
  const db = new BetterSqlite3(':memory:');
  db.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => 1);
  db.exec(
    'CREATE TABLE data_source_entries (id INTEGER PRIMARY KEY, data_source_id INTEGER, data TEXT, sort_order REAL, created_at TEXT, updated_at TEXT, deleted_at TEXT)',
  );
  const put = db.prepare('INSERT INTO data_source_entries (data_source_id, data, sort_order, created_at, updated_at) VALUES (1, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 300_000; i++) {
      const at = new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString();
      put.run(JSON.stringify({ name: `Person ${i}`, email: `person${i}@example.com`, age: i % 90, city: CITIES[i % 8], active: i % 3 !== 0 }), i, at, at);
    }
  })();
  db.exec('CREATE INDEX entries_ds ON data_source_entries (data_source_id, sort_order, id DESC)');
  const term = ` AND ${sqliteBudgetCheck('id')}`;
  const statements = [
    [
      'count of a `where` (pagination, no index)',
      selectStatement('sqlite', 1, planSqlSelect(compileQuery({ where: { city: 'Oslo' }, limit: 20, includePagination: true }))!),
    ],
    [
      '`$group` by `city`, `$sum: 1`',
      aggregateStatement('sqlite', 1, planSqlAggregate(compileQuery({ aggregate: [{ $group: { _id: '$data.city', n: { $sum: 1 } } }] }))!, 1_000_000),
    ],
    ['first page, no `where`', selectStatement('sqlite', 1, planSqlSelect(compileQuery({ limit: 20 }))!)],
  ] as const;
  const costLines: string[] = [];
  for (const [name, { text, params }] of statements) {
    expect(text).toContain(term);
    // Without the term, its `?` (the multiplier) goes too: the parameters of the `?`s before each term's are kept.
    const salts = new Set<number>();
    text
      .split(term)
      .slice(0, -1)
      .reduce((before, part) => {
        const at = before + (part.match(/\?/g) ?? []).length;
        salts.add(at);
        return at + 1;
      }, 0);
    const rest = params.filter((_, i) => !salts.has(i));
    const variants = [text, text.replaceAll(term, ''), text.replaceAll(term, ` AND ${SQLITE_BUDGET_FUNCTION}(id)`)].map((t) => db.prepare(t));
    const paramsOf = [params, rest, rest];
    const times: number[][] = [[], [], []];
    for (let i = 0; i <= RUNS; i++) {
      variants.forEach((statement, v) => {
        const t = performance.now();
        statement.all(...paramsOf[v]!);
        if (i > 0) times[v]!.push(performance.now() - t);
      });
    }
    const [withTerm, without, everyRow] = times.map(median) as [number, number, number];
    costLines.push(
      `| ${name} | ${without.toFixed(1)} ms | ${withTerm.toFixed(1)} ms (${((withTerm / without - 1) * 100).toFixed(0)} %) | ${everyRow.toFixed(1)} ms (${((everyRow / without - 1) * 100).toFixed(0)} %) |`,
    );
  }
  db.close();
  console.log(
    [
      `\n### Plain select beside a slow aggregation (median of ${RUNS}; alone and bare: of ${3 * RUNS})`,
      '',
      ...header,
      ...lines,
      '',
      '### What a read costs on a reader thread (the plain select, median of 300, interleaved)',
      '',
      '| bare statement (better-sqlite3) | `bounded` on the main thread | `bounded` on a reader thread |',
      '| --- | --- | --- |',
      ...hopLines,
      '',
      `### The check term, 300,000 entries, bare better-sqlite3 (median of ${RUNS})`,
      '',
      '| statement | without the term | with it (a call for 1 row in 8) | a call on every row |',
      '| --- | --- | --- | --- |',
      ...costLines,
    ].join('\n'),
  );
});

it('a plain select beside a slow aggregation, and the transaction per read (PostgreSQL)', async () => {
  const { cluster, url } = await startClusterWithDatabase('iar_budgetbench');
  const db = openPostgres({ url, max: 2 });
  try {
    const server = await startServer({ port: 0, databaseUrl: url, log: false, limits: { aggregateTimeoutMs: BUDGET_MS } });
    let lines: string[];
    try {
      const plan = planSqlSelect(compileQuery(plainBody))!;
      let ds: number | undefined;
      lines = await beside(
        server,
        async () => {
          ds ??= (await db.query<{ id: number }>("SELECT id FROM data_sources WHERE name = 'Plain'"))[0]!.id;
          const statement = selectStatement('postgres', ds, plan);
          expect(await db.all(statement.text, statement.params)).toHaveLength(20);
        },
        'PostgreSQL',
      );
    } finally {
      await server.close();
    }
    const direct: number[] = [];
    const bounded: number[] = [];
    for (let i = 0; i < 200; i++) {
      direct.push(await timed(() => db.get('SELECT 1 AS one')));
      bounded.push(await timed(() => db.bounded(BUDGET_MS, (q) => q.get('SELECT 1 AS one'))));
    }
    console.log(
      [
        `\n### Plain select beside a slow aggregation (median of ${RUNS}; alone and bare: of ${3 * RUNS})`,
        '',
        ...header,
        ...lines,
        '',
        '### A read in its budgeted transaction (`SELECT 1`, median of 200)',
        '',
        '| plain statement (autocommit) | `bounded` (BEGIN + SET LOCAL, statement, COMMIT) |',
        '| --- | --- |',
        `| ${median(direct).toFixed(2)} ms | ${median(bounded).toFixed(2)} ms |`,
      ].join('\n'),
    );
  } finally {
    await db.close();
    cluster.stop();
  }
});
