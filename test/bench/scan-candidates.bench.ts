import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { benchRow, loadedBenchServer, medianMs } from './bench-api.js';

/**
 * Issue 14, "the JS evaluator stays only for what cannot be translated": selects whose `where` has a part SQL
 * does not take (`$filters`, `$regex`), over HTTP against the real backend on SQLite (a file database, the
 * server restarted after loading, entry cache smaller than the data set: the select is scanned in pages,
 * scan-select.ts). The part that translates picks the candidates in SQL (sql/candidates.ts); the rest runs in JS
 * on them. Beside each: the hand-written json_extract SQL of the whole query on a bare better-sqlite3
 * connection to the same file, same run. Sizes: 300,000 and 1,000,000 (`BENCH_SIZES=300000` for one).
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000,1000000').split(',').map(Number);
const RUNS = 5;
const row = benchRow;

const median = (fn: () => Promise<void> | void) => medianMs(RUNS, fn);

const CASES = (n: number) => [
  {
    // Numeric operands translate since 2026-11-28 (docs/sql.md "`$filters`"); before, nothing was picked and every entry was scanned in JS.
    name: '`$filters` age > 30 (a numeric operand), limit 20 + pagination',
    body: { where: { $filters: [{ column: 'age', condition: '>', value: 30 }] }, limit: 20, includePagination: true },
    plain: `SELECT (SELECT COUNT(*) FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.age') > 30) AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.age') > 30 ORDER BY sort_order, id DESC LIMIT 20`,
  },
  {
    name: '`city` = X and `$filters` name contains "77", limit 20 + pagination',
    body: { where: { city: 'Oslo', $filters: [{ column: 'name', condition: 'contains', value: '77' }] }, limit: 20, includePagination: true },
    plain: `SELECT (SELECT COUNT(*) FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.city') = 'Oslo' AND instr(lower(json_extract(data, '$.name')), '77') > 0) AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.city') = 'Oslo' AND instr(lower(json_extract(data, '$.name')), '77') > 0 ORDER BY sort_order, id DESC LIMIT 20`,
  },
  {
    // Caseful operands translate since 2026-11-28 (SQLite: iar_lower, JS's toLowerCase); before, every entry was
    // scanned in JS. The bare SQL folds with lower() (ASCII only: not the same answer in general, the same work).
    name: '`$filters` name contains "é" (a caseful needle), limit 20 + pagination',
    body: { where: { $filters: [{ column: 'name', condition: 'contains', value: 'é' }] }, limit: 20, includePagination: true },
    plain: `SELECT (SELECT COUNT(*) FROM data_source_entries WHERE data_source_id = @ds AND instr(lower(json_extract(data, '$.name')), 'é') > 0) AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND instr(lower(json_extract(data, '$.name')), 'é') > 0 ORDER BY sort_order, id DESC LIMIT 20`,
  },
  {
    name: '`email` = X and `name` `$regex` ^Person',
    body: { where: { email: `person${n - 5}@example.com`, name: { $regex: '^Person' } }, limit: 20 },
    plain: `SELECT NULL AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.email') = 'person${n - 5}@example.com' AND json_extract(data, '$.name') GLOB 'Person*' ORDER BY sort_order, id DESC LIMIT 20`,
  },
  {
    name: '`age` ≥ 88 and `$filters` city oneof [Oslo, Lima], order `age` DESC, limit 20',
    body: { where: { age: { $gte: 88 }, $filters: [{ column: 'city', condition: 'oneof', value: ['Oslo', 'Lima'] }] }, order: [['age', 'DESC']], limit: 20 },
    plain: `SELECT NULL AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.age') >= 88 AND lower(json_extract(data, '$.city')) IN ('oslo', 'lima') ORDER BY json_extract(data, '$.age') DESC, sort_order, id DESC LIMIT 20`,
  },
];

for (const n of SIZES) {
  it(`scanned selects at ${n.toLocaleString('en')} entries (SQLite)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-scanbench-'));
    // The entry cache holds fewer entries than the data set: the scan path (as for any large data set).
    const options = { port: 0, dataDir: dir, log: false, limits: { autoIndexAfter: 0, entryCacheEntries: 10_000, aggregateTimeoutMs: 60_000 } };
    try {
      const { ds, file, server, api } = await loadedBenchServer(options, n, row);
      const bare = new BetterSqlite3(file, { readonly: true });
      const lines: string[] = [];
      const measure = async (phase: string) => {
        for (const c of CASES(n)) {
          let count = -1;
          const http = await median(async () => {
            const result = await api('POST', `/v1/data-sources/${ds}/data/query`, c.body);
            count = result.entries.length;
          });
          const plain = bare.prepare(c.plain);
          let bareCount = -2;
          const plainMs = await median(() => {
            const rows = plain.all({ ds }) as { data: string }[];
            rows.forEach((r) => JSON.parse(r.data));
            bareCount = rows.length;
          });
          expect(count).toBe(bareCount);
          lines.push(`| ${c.name} | ${phase} | ${count} | ${http.toFixed(1)} ms | ${plainMs.toFixed(1)} ms | ${(http / plainMs).toFixed(2)}× |`);
        }
      };
      await measure('none');
      await api('PUT', `/v1/data-sources/${ds}`, { definition: { indexes: ['email', 'city', 'age'] } });
      await measure('email, city, age');
      const rss = process.memoryUsage().rss;
      bare.close();
      await server.close();
      console.log(
        [
          `\n### ${n.toLocaleString('en')} entries (SQLite file, median of ${RUNS}; load ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`,
          '',
          '| query (HTTP, real server) | indexes | rows | server | bare: plain json_extract SQL | server / bare |',
          '| --- | --- | --- | --- | --- | --- |',
          ...lines,
          `| process RSS after the queries | | | ${(rss / 2 ** 20).toFixed(0)} MB | | |`,
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
