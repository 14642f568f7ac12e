import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import type { Queryable } from '../../src/server/db/database.js';
import { planSqlSelect, runSqlSelect } from '../../src/server/data-sources/sql/select.js';
import { SQLITE_BUDGET_FUNCTION } from '../../src/server/db/statement-budget.js';
import { benchRow, loadedBenchServer, medianMs } from './bench-api.js';

/**
 * Distinct selects run by SQLite (docs/sql.md, "Distinct rows") over HTTP against the real backend (a file
 * database larger than the entry cache, so what the translation leaves to JS is scanned), beside, in the same run
 * on the same file: bare better-sqlite3 running the translator's statement, a hand-written `GROUP BY` of the same
 * rows (the least a database can do for them), and the JS scan of the same select (a `$filters` every entry meets,
 * which the translation refuses: the answer is the same). Size: `BENCH_SIZES` (default 300,000).
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000').split(',').map(Number);
const RUNS = 5;
const ALWAYS = { $filters: [{ column: 'age', condition: '>=', value: '0' }] };

const CASES = [
  {
    name: 'distinct city (8 rows), count',
    body: { attributes: ['city'], distinct: true, includePagination: true },
    plain: `SELECT json_extract(data, '$.city') AS c, MIN(sort_order) AS o FROM data_source_entries WHERE data_source_id = ? GROUP BY c ORDER BY o`,
  },
  {
    name: 'distinct city, age where active, order age DESC, limit 20, count',
    body: { attributes: ['city', 'age'], where: { active: true }, order: [['age', 'DESC']], distinct: true, limit: 20, includePagination: true },
    plain: `SELECT json_extract(data, '$.city') AS c, json_extract(data, '$.age') AS a FROM data_source_entries WHERE data_source_id = ? AND json_extract(data, '$.active') = 1 GROUP BY c, a ORDER BY a DESC LIMIT 20`,
  },
];

for (const n of SIZES) {
  it(`distinct selects at ${n.toLocaleString('en')} entries (SQLite)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-distinctbench-'));
    const options = { port: 0, dataDir: dir, log: false, limits: { autoIndexAfter: 0, entryCacheEntries: 1_000, aggregateTimeoutMs: 60_000 } };
    try {
      const { ds, file, server, api } = await loadedBenchServer(options, n, benchRow);
      const bare = new BetterSqlite3(file, { readonly: true });
      bare.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => 1);
      const bareDb: Queryable = {
        all: async <T>(text: string, params: readonly unknown[] = []) => bare.prepare(text).all(...params) as T[],
        get: async <T>(text: string, params: readonly unknown[] = []) => bare.prepare(text).get(...params) as T | undefined,
        run: async () => ({ changes: 0 }),
      };
      const lines: string[] = [];
      for (const c of CASES) {
        const want = await api('POST', `/v1/data-sources/${ds}/data/query`, c.body);
        const scanned = await api('POST', `/v1/data-sources/${ds}/data/query`, { ...c.body, where: { ...(c.body.where ?? {}), ...ALWAYS } });
        expect(scanned).toEqual(want);
        const http = await medianMs(RUNS, () => api('POST', `/v1/data-sources/${ds}/data/query`, c.body));
        const plan = planSqlSelect(compileQuery(c.body))!;
        const sameMs = await medianMs(RUNS, async () => {
          const result = await runSqlSelect(bareDb, 'sqlite', ds, plan);
          expect(result?.entries.length).toBe(want.entries.length);
        });
        const plain = bare.prepare(c.plain);
        const plainMs = await medianMs(RUNS, () => {
          plain.all(ds);
        });
        const scanMs = await medianMs(1, () => api('POST', `/v1/data-sources/${ds}/data/query`, { ...c.body, where: { ...(c.body.where ?? {}), ...ALWAYS } }));
        lines.push(
          `| ${c.name} | ${http.toFixed(0)} ms | ${sameMs.toFixed(0)} ms | ${plainMs.toFixed(0)} ms | ${scanMs.toFixed(0)} ms | ${(http / plainMs).toFixed(2)}× |`,
        );
      }
      bare.close();
      await server.close();
      console.log(
        [
          `\n### ${n.toLocaleString('en')} entries (SQLite file, median of ${RUNS}; the scan: median of 1 after a warm-up)`,
          '',
          '| query (HTTP, real server) | server (SQL) | bare: same SQL | bare: GROUP BY | server: JS scan (before) | server / GROUP BY |',
          '| --- | --- | --- | --- | --- | --- |',
          ...lines,
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
}
