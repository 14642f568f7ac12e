import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { DEFAULT_AGGREGATE_LIMITS } from '../../src/server/data-sources/query/aggregate.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { aggregateStatement } from '../../src/server/data-sources/sql/aggregate.js';
import { indexedGroupStatement } from '../../src/server/data-sources/sql/aggregate-indexed.js';
import { planSqlAggregate } from '../../src/server/data-sources/sql/aggregate-plan.js';
import { BENCH_CITIES, benchApi, benchRow, loadedBenchServer, medianMs } from './bench-api.js';
import { startServer } from '../../src/server/index.js';
import { SQLITE_BUDGET_FUNCTION } from '../../src/server/db/statement-budget.js';

/**
 * Issue 14, aggregations run by the database: `aggregate` pipelines over HTTP against the real backend on
 * SQLite (a file database, rows written straight into it, the server restarted so nothing is cached), beside,
 * in the same run on the same file: bare better-sqlite3 running (1) the very statement the translator
 * generates and (2) the GROUP BY a person would write with json_extract; and (3) the same pipeline on the JS
 * evaluator, up to 300,000 entries (`BENCH_JS_UP_TO`) (mingo over the entry cache, warm after the first run: the body gets `order: [['order', 'ASC']]`,
 * the default order, which the translation leaves to JS). Sizes 300,000 and 1,000,000 (`BENCH_SIZES=300000`
 * for one). RSS is the benchmark process's (the server runs in it).
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000,1000000').split(',').map(Number);
const RUNS = 5;
/** The JS evaluator is measured up to this size (its entry cache holds every entry). */
const JS_UP_TO = Number(process.env.BENCH_JS_UP_TO ?? 300_000);
const CITIES = BENCH_CITIES;
const row = benchRow;
const median = (fn: () => Promise<void> | void, runs = RUNS) => medianMs(runs, fn);

interface Case {
  name: string;
  aggregate: object[];
  /** Hand-written SQL over the same table (`?` = data source id). */
  plain: string;
  groups: number;
}

const CASES: Case[] = [
  {
    name: '$group by a column, $sum: 1 (all entries)',
    aggregate: [{ $group: { _id: '$data.city', n: { $sum: 1 } } }],
    plain: `SELECT json_extract(data, '$.city') AS city, COUNT(*) AS n FROM data_source_entries WHERE data_source_id = ? GROUP BY 1`,
    groups: CITIES.length,
  },
  {
    name: '$group by a column, $avg/$min/$max, $sort',
    aggregate: [
      { $group: { _id: '$data.city', n: { $sum: 1 }, avgAge: { $avg: '$data.age' }, youngest: { $min: '$data.age' }, oldest: { $max: '$data.age' } } },
      { $sort: { avgAge: -1 } },
    ],
    plain: `SELECT json_extract(data, '$.city') AS city, COUNT(*) AS n, AVG(json_extract(data, '$.age')) AS a, MIN(json_extract(data, '$.age')) AS lo, MAX(json_extract(data, '$.age')) AS hi FROM data_source_entries WHERE data_source_id = ? GROUP BY 1 ORDER BY a DESC`,
    groups: CITIES.length,
  },
  {
    name: '$group _id null, $sum of a column',
    aggregate: [{ $group: { _id: null, total: { $sum: '$data.age' } } }],
    plain: `SELECT SUM(json_extract(data, '$.age')) AS total FROM data_source_entries WHERE data_source_id = ?`,
    groups: 1,
  },
  {
    name: '$match + $group',
    aggregate: [{ $match: { 'data.active': true } }, { $group: { _id: '$data.city', n: { $sum: 1 } } }],
    plain: `SELECT json_extract(data, '$.city') AS city, COUNT(*) AS n FROM data_source_entries WHERE data_source_id = ? AND json_extract(data, '$.active') = 1 GROUP BY 1`,
    groups: CITIES.length,
  },
];

for (const n of SIZES) {
  it(`aggregations at ${n.toLocaleString('en')} entries (SQLite)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-aggbench-'));
    // The JS evaluator is a baseline here: its budgets and the answer cap (limits.queryRows) are raised so it runs.
    const options = {
      port: 0,
      dataDir: dir,
      log: false,
      limits: { autoIndexAfter: 0, aggregateTimeoutMs: 60_000, aggregateBytes: 2 ** 31, queryRows: 10_000_000 },
    };
    try {
      const { ds, file, server, api: firstApi, apiToken } = await loadedBenchServer(options, n, row);
      const rssBefore = process.memoryUsage().rss;

      const bare = new BetterSqlite3(file, { readonly: true });
      // The translator's statements call the time budget's check (unarmed here, as in the server outside a read).
      bare.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => 1);
      const results: { c: Case; http: number; same: number; plain: number; answer: unknown }[] = [];
      for (const c of CASES) {
        let answer: unknown;
        const http = await median(async () => {
          const result = await firstApi('POST', `/v1/data-sources/${ds}/data/query`, { aggregate: c.aggregate });
          expect(result.entries.length).toBe(c.groups);
          answer = result.entries;
        });
        const plan = planSqlAggregate(compileQuery({ aggregate: c.aggregate }));
        expect(plan).not.toBeNull();
        const st = aggregateStatement('sqlite', ds, plan!, Math.floor(DEFAULT_AGGREGATE_LIMITS.bytes / 40));
        const same = bare.prepare(st.text);
        const sameMs = await median(() => {
          expect(same.all(...st.params).length).toBe(c.groups);
        });
        const plain = bare.prepare(c.plain);
        const plainMs = await median(() => {
          expect(plain.all(...Array.from({ length: plain.source.split('?').length - 1 }, () => ds)).length).toBe(c.groups);
        });
        results.push({ c, http, same: sameMs, plain: plainMs, answer });
      }
      // The count by city again, on a server with the default automatic indexing (limits.autoIndexAfter 50): the
      // first count scans, and weighed by the entries it read (limits.autoIndexScanRows) it has `city` indexed in
      // the background; the next ones read the groups from the index alone.
      await server.close();
      const auto = await startServer({ ...options, limits: { ...options.limits, autoIndexAfter: 50 } });
      const autoApi = benchApi(() => auto, apiToken);
      const counting = results[0]!;
      // Counted until the index is listed: one run from 500,000 entries on (50 × 10,000), more below.
      const listed = bare.prepare('SELECT 1 FROM data_source_indexes WHERE data_source_id = ? AND path = ?');
      // The server's longest event-loop stall from the first count until the index is listed (the build runs on a
      // thread of its own: docs/sql.md "Indexes"); this process is the server's.
      const stall = monitorEventLoopDelay({ resolution: 10 });
      stall.enable();
      const t = performance.now();
      let scans = 0;
      let firstMs = 0;
      while (listed.get(ds, 'city') === undefined) {
        if (scans < 60) {
          const started = performance.now();
          expect((await autoApi('POST', `/v1/data-sources/${ds}/data/query`, { aggregate: counting.c.aggregate })).entries).toEqual(counting.answer);
          if (scans++ === 0) firstMs = performance.now() - started;
        } else if (performance.now() - t > 600_000) throw new Error('the automatic index of `city` was not built');
        await new Promise((r) => setTimeout(r, 20));
      }
      const untilIndexedMs = performance.now() - t;
      stall.disable();
      const stallMs = stall.max / 1e6;
      const indexedHttp = await median(async () => {
        const result = await autoApi('POST', `/v1/data-sources/${ds}/data/query`, { aggregate: counting.c.aggregate });
        expect(result.entries).toEqual(counting.answer);
      });
      const ist = indexedGroupStatement(ds, ['city'], Math.floor(DEFAULT_AGGREGATE_LIMITS.bytes / 40));
      const indexedSame = bare.prepare(ist.text);
      const indexedSameMs = await median(() => {
        expect(indexedSame.all(...ist.params).length).toBe(counting.c.groups);
      });
      const plainAgain = bare.prepare(counting.c.plain);
      const plainAgainMs = await median(() => {
        expect(plainAgain.all(ds).length).toBe(counting.c.groups);
      });
      const rssSql = process.memoryUsage().rss;
      // The JS evaluator on the same pipelines (the first run fills the entry cache; the median is warm).
      const lines: string[] = [];
      for (const r of results) {
        // Past JS_UP_TO the entry cache alone would hold the whole data source in the process: not run.
        const js =
          n <= JS_UP_TO
            ? `${(
                await median(async () => {
                  const result = await autoApi('POST', `/v1/data-sources/${ds}/data/query`, { aggregate: r.c.aggregate, order: [['order', 'ASC']] });
                  expect(result.entries).toEqual(r.answer);
                }, 3)
              ).toFixed(0)} ms`
            : 'not run';
        lines.push(
          `| ${r.c.name} | ${r.http.toFixed(0)} ms | ${r.same.toFixed(0)} ms | ${r.plain.toFixed(0)} ms | ${(r.http / r.plain).toFixed(2)}× | ${js} |`,
        );
      }
      lines.push(
        `| ${counting.c.name}, \`city\` indexed automatically after ${scans} run(s) (first ${firstMs.toFixed(0)} ms; listed ${untilIndexedMs.toFixed(0)} ms after it began; longest stall of the server's thread meanwhile ${stallMs.toFixed(0)} ms) | ${indexedHttp.toFixed(0)} ms | ${indexedSameMs.toFixed(0)} ms | ${plainAgainMs.toFixed(0)} ms | ${(indexedHttp / plainAgainMs).toFixed(2)}× | |`,
      );
      const rssJs = process.memoryUsage().rss;
      bare.close();
      await auto.close();
      console.log(
        [
          `\n### ${n.toLocaleString('en')} entries (SQLite file, median of ${RUNS})`,
          '',
          '| pipeline (HTTP, real server) | server (SQL) | bare: same SQL | bare: plain GROUP BY | server / plain | server, JS evaluator (cache warm, median of 3) |',
          '| --- | --- | --- | --- | --- | --- |',
          ...lines,
          `| process RSS: before / after the SQL runs / after the JS runs | ${(rssBefore / 2 ** 20).toFixed(0)} MB | ${(rssSql / 2 ** 20).toFixed(0)} MB | | | ${(rssJs / 2 ** 20).toFixed(0)} MB |`,
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 1_800_000); // 1M entries on a loaded 2-core machine: several minutes
}
