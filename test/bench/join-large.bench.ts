import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { benchRow, loadedBenchServer, medianMs } from './bench-api.js';

/**
 * Issue 14, "no whole data source is held in memory", for joins: a query on a small data source joining the large
 * one ("Bench", larger than the entry cache), over HTTP against the real backend on SQLite (a file database,
 * restarted after loading). Reported per case: the server's time, the process's peak RSS growth during the
 * requests (sampled every 5 ms), and the hand-written json_extract SQL of the joined matches on a bare
 * better-sqlite3 connection to the same file, same run. `BENCH_SIZES` (default 300000).
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000').split(',').map(Number);
const RUNS = 3;

const CASES = (n: number) => [
  {
    name: 'join `where`: `email` = X and `name` `$regex` (part in SQL)',
    where: { email: `person${n - 7}@example.com`, name: { $regex: '^Person' } },
    plain: `SELECT id, data FROM data_source_entries WHERE data_source_id = @ds AND json_extract(data, '$.email') = 'person${n - 7}@example.com' AND json_extract(data, '$.name') GLOB 'Person*'`,
  },
  {
    name: 'join `where`: `$filters` name contains "77777" (nothing in SQL)',
    where: { $filters: [{ column: 'name', condition: 'contains', value: '77777' }] },
    plain: `SELECT id, data FROM data_source_entries WHERE data_source_id = @ds AND instr(lower(json_extract(data, '$.name')), '77777') > 0`,
  },
  {
    name: 'join without `where` (every entry)',
    where: undefined,
    plain: `SELECT id, data FROM data_source_entries WHERE data_source_id = @ds`,
  },
];

for (const n of SIZES) {
  it(`joins of a data source of ${n.toLocaleString('en')} entries (SQLite)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-joinbench-'));
    const options = { port: 0, dataDir: dir, log: false, limits: { autoIndexAfter: 0, entryCacheEntries: 10_000, aggregateTimeoutMs: 60_000 } };
    try {
      const { ds, appId, file, server, api } = await loadedBenchServer(options, n, benchRow);
      const parent = (await api('POST', `/v1/data-sources?appId=${appId}`, { name: 'Parent' })).dataSource.id as number;
      await api('POST', `/v1/data-sources/${parent}/data`, { entries: ['Oslo', 'Lima', 'Cork'].map((city) => ({ city })) });
      const bare = new BetterSqlite3(file, { readonly: true });
      const lines: string[] = [];
      for (const c of CASES(n)) {
        const body = { join: { J: { dataSourceId: ds, on: { 'data.city': 'data.city' }, where: c.where, count: true } } };
        const base = process.memoryUsage().rss;
        let peak = base;
        const sampler = setInterval(() => {
          peak = Math.max(peak, process.memoryUsage().rss);
        }, 5);
        let answer = '';
        const http = await medianMs(RUNS, async () => {
          const res = await fetch(`${server.url}/v1/data-sources/${parent}/data/query`, {
            method: 'POST',
            headers: { 'Auth-token': server.bootstrap.apiToken, 'Content-Type': 'application/json' },
            body: JSON.stringify(body),
          });
          const json = (await res.json()) as { entries?: { joins: { J: number } }[]; error?: { code: string } };
          answer = res.ok ? `${json.entries!.reduce((sum, e) => sum + e.joins.J, 0)} joined` : `${res.status} ${json.error!.code}`;
        });
        clearInterval(sampler);
        const plain = bare.prepare(c.plain);
        let rows = 0;
        const plainMs = await medianMs(RUNS, () => {
          const all = plain.all({ ds }) as { data: string }[];
          for (const r of all) JSON.parse(r.data);
          rows = all.length;
        });
        expect(rows).toBeGreaterThan(0);
        lines.push(
          `| ${c.name} | ${answer} | ${http.toFixed(1)} ms | +${((peak - base) / 2 ** 20).toFixed(0)} MB | ${rows} rows, ${plainMs.toFixed(1)} ms | ${(http / plainMs).toFixed(2)}× |`,
        );
      }
      bare.close();
      await server.close();
      console.log(
        [
          `\n### ${n.toLocaleString('en')} joined entries (SQLite file, median of ${RUNS}; load ${loadavg()[0]!.toFixed(1)})`,
          '',
          '| query (HTTP, real server) | answer | server | peak RSS growth | bare: json_extract SQL of the joined matches | server / bare |',
          '| --- | --- | --- | --- | --- | --- |',
          ...lines,
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 1_800_000);
}
