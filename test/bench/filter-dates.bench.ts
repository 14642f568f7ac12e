import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { loadedBenchServer, medianMs } from './bench-api.js';

/**
 * Issue 14: `$filters` date conditions run by the database (docs/sql.md "`$filters`", dates.ts read by
 * `iar_date_sign`). Over HTTP against the real backend on a SQLite file (entry cache smaller than the data set, as
 * any large data source), beside the hand-written SQL of the same question on a bare better-sqlite3 connection to
 * the same file (ISO texts compared as text, which is right for these rows only), same run. `BENCH_SIZES`
 * (default 300,000). The JS evaluator's figure: this file run on the source of the commit before 0df0b7d.
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000').split(',').map(Number);
const RUNS = 5;
const DAY = 86_400_000;
const T0 = Date.UTC(2020, 0, 1);
/** Entry i: a due date (a day, as a date picker writes it), a date-time, and a number. */
const row = (i: number) => ({
  due: new Date(T0 + (i % 2000) * DAY).toISOString().slice(0, 10),
  seen: new Date(T0 + i * 60_000).toISOString(),
  n: i,
});

const CASES = [
  {
    name: '`due` dateafter 2024-06-01, limit 20 + pagination',
    body: { where: { $filters: [{ column: 'due', condition: 'dateafter', value: '2024-06-01' }] }, limit: 20, includePagination: true },
    bare: `SELECT (SELECT COUNT(*) FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.due') > '2024-06-01') AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.due') > '2024-06-01' ORDER BY sort_order, id DESC LIMIT 20`,
  },
  {
    name: '`due` dateis 2021-03 (unit month), limit 20 + pagination',
    body: { where: { $filters: [{ column: 'due', condition: 'dateis', value: '2021-03-01', unit: 'month' }] }, limit: 20, includePagination: true },
    bare: `SELECT (SELECT COUNT(*) FROM data_source_entries WHERE data_source_id = @ds AND substr(json_extract(data, '$.due'), 1, 7) = '2021-03') AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND substr(json_extract(data, '$.due'), 1, 7) = '2021-03' ORDER BY sort_order, id DESC LIMIT 20`,
  },
  {
    name: '`seen` datebetween two date-times, limit 20 + pagination',
    body: {
      where: { $filters: [{ column: 'seen', condition: 'datebetween', value: { from: { value: '2020-03-01 00:00' }, to: { value: '2020-03-31 23:59' } } }] },
      limit: 20,
      includePagination: true,
    },
    bare: `SELECT (SELECT COUNT(*) FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.seen') >= '2020-03-01T00:00' AND json_extract(data, '$.seen') < '2020-03-31T23:59:60') AS total, id, data FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.seen') >= '2020-03-01T00:00' AND json_extract(data, '$.seen') < '2020-03-31T23:59:60' ORDER BY sort_order, id DESC LIMIT 20`,
  },
];

for (const n of SIZES) {
  it(`date filters at ${n.toLocaleString('en')} entries (SQLite)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-datebench-'));
    const options = { port: 0, dataDir: dir, log: false, limits: { autoIndexAfter: 0, entryCacheEntries: 10_000, aggregateTimeoutMs: 60_000 } };
    try {
      const { ds, file, server, api } = await loadedBenchServer(options, n, row);
      const bare = new BetterSqlite3(file, { readonly: true });
      const lines: string[] = [];
      for (const c of CASES) {
        let answer: { entries: unknown[]; pagination: { total: number } } | undefined;
        const http = await medianMs(RUNS, async () => {
          answer = await api('POST', `/v1/data-sources/${ds}/data/query`, c.body);
        });
        const plain = bare.prepare(c.bare);
        let rows: { total: number; data: string }[] = [];
        const bareMs = await medianMs(RUNS, () => {
          rows = plain.all({ ds }) as { total: number; data: string }[];
          rows.forEach((r) => JSON.parse(r.data));
        });
        expect({ total: answer?.pagination.total, page: answer?.entries.length }).toEqual({ total: rows[0]?.total, page: rows.length });
        lines.push(`| ${c.name} | ${answer?.pagination.total} | ${http.toFixed(0)} ms | ${bareMs.toFixed(0)} ms | ${(http / bareMs).toFixed(2)}× |`);
      }
      bare.close();
      await server.close();
      console.log(
        [
          `\n### ${n.toLocaleString('en')} entries (SQLite file, median of ${RUNS}; load ${loadavg()[0]!.toFixed(1)})`,
          '',
          '| query (HTTP, real server) | matches | server | bare: hand-written SQL | server / bare |',
          '| --- | --- | --- | --- | --- |',
          ...lines,
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
}
