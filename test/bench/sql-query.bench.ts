import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import type { Queryable } from '../../src/server/db/database.js';
import { descKey } from '../../src/server/data-sources/sql/prefilter.js';
import { planSqlSelect, runSqlSelect } from '../../src/server/data-sources/sql/select.js';
import { benchRow, loadedBenchServer, medianMs } from './bench-api.js';
import { SQLITE_BUDGET_FUNCTION } from '../../src/server/db/statement-budget.js';

/**
 * Issue 14, "queries executed by the database": selects over HTTP against the real backend on SQLite (a file
 * database, the server restarted after loading so no entry cache is warm), each beside bare better-sqlite3 in
 * the same run on the same file: (1) the very SQL the translator generates (every statement runSqlSelect runs:
 * walk.ts's probes, then the page), (2) the plain json_extract SQL a
 * person would write. Sizes: 300,000 and 1,000,000 (`BENCH_SIZES=300000` for one). Rows are written straight
 * into the database (the write path is measured elsewhere). RSS is the benchmark process's (the server runs
 * in it), after the queries.
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000,1000000').split(',').map(Number);
const RUNS = 7;
const INDEXED = ['email', 'city', 'age'];
/** Declared as well: `age`'s descending index (`['age', 'DESC']`, key `desc:age`), which an order by `age` DESC walks. */
const DECLARED: unknown[] = [...INDEXED, ['age', 'DESC']];
const INDEX_KEYS = [...INDEXED, descKey('age')];
const row = benchRow;

const median = (fn: () => Promise<void> | void) => medianMs(RUNS, fn);

interface Case {
  name: string;
  body: Record<string, unknown>;
  /** Hand-written SQL over the same table (`?` = data source id). */
  plain: string;
  expected: number;
}

const CASES = (n: number): Case[] => [
  {
    name: 'equality where + limit',
    body: { where: { email: `person${n - 5}@example.com` }, limit: 20 },
    plain: `SELECT id, data FROM data_source_entries WHERE data_source_id = ? AND json_extract(data, '$.email') = 'person${n - 5}@example.com' ORDER BY sort_order, id DESC LIMIT 20`,
    expected: 1,
  },
  {
    name: 'where + order + limit',
    body: { where: { city: 'Oslo', age: { $gte: 30 } }, order: [['createdAt', 'DESC']], limit: 20 },
    plain: `SELECT id, data FROM data_source_entries WHERE data_source_id = ? AND json_extract(data, '$.city') = 'Oslo' AND json_extract(data, '$.age') >= 30 ORDER BY created_at DESC, sort_order, id DESC LIMIT 20`,
    expected: 20,
  },
  {
    name: 'pagination count (where, limit 20, includePagination)',
    body: { where: { city: 'Oslo' }, limit: 20, includePagination: true },
    plain: `SELECT (SELECT COUNT(*) FROM data_source_entries WHERE data_source_id = ? AND json_extract(data, '$.city') = 'Oslo') AS total, id, data FROM data_source_entries WHERE data_source_id = ? AND json_extract(data, '$.city') = 'Oslo' ORDER BY sort_order, id DESC LIMIT 20`,
    expected: 20,
  },
  {
    name: 'where + order on a data column + limit',
    body: { where: { city: 'Oslo', active: true }, order: [['age', 'DESC']], limit: 20 },
    plain: `SELECT id, data FROM data_source_entries WHERE data_source_id = ? AND json_extract(data, '$.city') = 'Oslo' AND json_extract(data, '$.active') = 1 ORDER BY json_extract(data, '$.age') DESC, sort_order, id DESC LIMIT 20`,
    expected: 20,
  },
  {
    name: 'first page, no where (default order)',
    body: { limit: 20 },
    plain: `SELECT id, data FROM data_source_entries WHERE data_source_id = ? ORDER BY sort_order, id DESC LIMIT 20`,
    expected: 20,
  },
];

for (const n of SIZES) {
  it(`selects at ${n.toLocaleString('en')} entries (SQLite)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-sqlbench-'));
    const options = { port: 0, dataDir: dir, log: false, limits: { autoIndexAfter: 0 } }; // indexes only when declared below
    try {
      // Rows written straight into the file, then a fresh server (nothing cached).
      const { ds, file, server, api } = await loadedBenchServer(options, n, row);
      const rssBefore = process.memoryUsage().rss;

      const lines: string[] = [];
      const bare = new BetterSqlite3(file, { readonly: true });
      // The translator's statements call the time budget's check (unarmed here, as in the server outside a read).
      bare.function(SQLITE_BUDGET_FUNCTION, { deterministic: false }, (_id: unknown) => 1);
      const cached = new Map<string, BetterSqlite3.Statement>();
      const prepared = (text: string) => cached.get(text) ?? cached.set(text, bare.prepare(text)).get(text)!;
      const bareDb: Queryable = {
        all: async <T>(text: string, params: readonly unknown[] = []) => prepared(text).all(...params) as T[],
        get: async <T>(text: string, params: readonly unknown[] = []) => prepared(text).get(...params) as T | undefined,
        run: async () => ({ changes: 0 }),
      };
      const measure = async (phase: string, indexed: Set<string>) => {
        for (const c of CASES(n)) {
          const http = await median(async () => {
            const result = await api('POST', `/v1/data-sources/${ds}/data/query`, c.body);
            expect(result.entries.length).toBe(c.expected);
          });
          // The translator's own statements, run bare (what the server adds is HTTP, JSON and shaping).
          const plan = planSqlSelect(compileQuery(c.body))!;
          expect(plan).not.toBeNull();
          const sameMs = await median(async () => {
            const result = await runSqlSelect(bareDb, 'sqlite', ds, plan, indexed);
            expect(result?.entries.length).toBe(c.expected);
          });
          const plain = bare.prepare(c.plain);
          const plainMs = await median(() => {
            const rows = plain.all(...Array.from({ length: plain.source.split('?').length - 1 }, () => ds)) as { data: string }[];
            rows.forEach((r) => JSON.parse(r.data));
            expect(rows.length).toBe(c.expected);
          });
          lines.push(`| ${c.name} | ${phase} | ${http.toFixed(1)} ms | ${sameMs.toFixed(1)} ms | ${plainMs.toFixed(1)} ms | ${(http / plainMs).toFixed(2)}× |`);
        }
      };
      await measure('none', new Set());
      // Declared indexes (definition.indexes): the PUT answers once they are built.
      const t = performance.now();
      await api('PUT', `/v1/data-sources/${ds}`, { definition: { indexes: DECLARED } });
      const buildMs = performance.now() - t;
      await measure(`${INDEXED.join(', ')}, age DESC`, new Set(INDEX_KEYS));
      const rss = process.memoryUsage().rss;
      bare.close();
      await server.close();
      console.log(
        [
          `\n### ${n.toLocaleString('en')} entries (SQLite file, median of ${RUNS})`,
          '',
          '| query (HTTP, real server) | indexes | server | bare: same SQL | bare: plain json_extract SQL (no index) | server / plain |',
          '| --- | --- | --- | --- | --- | --- |',
          ...lines,
          `| building the ${DECLARED.length} declared indexes (PUT definition) | | ${buildMs.toFixed(0)} ms | | | |`,
          `| process RSS (server in process): before queries / after | | ${(rssBefore / 2 ** 20).toFixed(0)} MB | ${(rss / 2 ** 20).toFixed(0)} MB | | |`,
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
