import BetterSqlite3 from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { changesAfter } from '../../src/server/data-sources/store/changes.js';
import { loadEntries } from '../../src/server/data-sources/store/entries.js';
import { versionEntriesSource } from '../../src/server/data-sources/store/version-rows.js';
import { rebuildVersion } from '../../src/server/data-sources/versions.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { loadedBenchServer } from './bench-api.js';

/**
 * Issue 14, "memory bounded by configuration, not by data": reading an old version's data (`GET …/versions/:id/data`)
 * at 300,000 entries (`BENCH_SIZES`, as the other SQL benches), on a SQLite file, the server restarted after loading
 * (nothing cached). After: the database computes the version (store/version-rows.ts) and the answer is streamed in
 * pages, read by a client that hashes and drops each chunk. Before: the old code path, measured as the test oracle it
 * became (versions.ts `rebuildVersion` over every entry and every undo record, then the answer as one string), on a
 * second connection to the same file. Baseline: the same SQL statement run bare by better-sqlite3 (rows read, none
 * kept). Peak RSS is the process's (server and client share it), sampled every 10 ms, above its value before each
 * case; "after" runs first, so the "before" case cannot profit from memory the other freed.
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000').split(',').map(Number);
const RUNS = 3;
const CITIES = ['Cork', 'Oslo', 'Lima', 'Kyiv', 'Pune', 'Nice', 'Bern', 'Riga'];
const row = (i: number) => ({ name: `Person ${i}`, email: `person${i}@example.com`, age: i % 90, city: CITIES[i % CITIES.length], active: i % 3 !== 0 });
const mb = (bytes: number) => bytes / 2 ** 20;

/** CPU time of this process (server and client, all threads), ms: less sensitive than wall time to other load. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * Median wall and CPU time (ms) over RUNS runs after a warm-up, and the highest RSS seen above the RSS before the
 * warm-up (MB; the heap keeps what the warm-up grew).
 */
async function measure<T>(fn: () => Promise<T> | T): Promise<{ ms: number; cpu: number; peakMb: number; result: T }> {
  const base = process.memoryUsage().rss;
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  let result = await fn();
  const times: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const cpu = cpuMs();
    result = await fn();
    times.push(performance.now() - t);
    cpus.push(cpuMs() - cpu);
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  clearInterval(sampler);
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { ms: median(times), cpu: median(cpus), peakMb: mb(peak - base), result };
}

for (const n of SIZES) {
  it(`an old version's data at ${n.toLocaleString('en')} entries (SQLite file)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-verbench-'));
    const options = { port: 0, dataDir: dir, log: false, limits: { bodyBytes: 64 * 1024 * 1024, entryCacheEntries: 0 } };
    try {
      // Rows written straight into the file, then a fresh server (nothing cached).
      let firstId = 0;
      const { ds, file, server, api, apiToken } = await loadedBenchServer(options, n, row, (load, id) => {
        firstId = (load.prepare('SELECT MIN(id) AS id FROM data_source_entries WHERE data_source_id = ?').get(id) as { id: number }).id;
      });

      // History: the old version is the one the first commit takes; every kind of write follows it.
      const id = (k: number) => firstId + ((k * 7919) % n);
      await api('POST', `/v1/data-sources/${ds}/commit`, {
        append: true,
        entries: Array.from({ length: 1_000 }, (_, k) => ({ id: id(k), data: { ...row(k), updated: 1 } })),
        delete: Array.from({ length: 500 }, (_, k) => id(1_000 + k)),
      });
      const [oldVersion] = (await api('GET', `/v1/data-sources/${ds}/versions`)).versions as { id: number }[];
      await api('POST', `/v1/data-sources/${ds}/data`, { append: true, entries: Array.from({ length: 5_000 }, (_, k) => row(n + k)) });
      for (let k = 0; k < 100; k++) await api('PUT', `/v1/data-sources/${ds}/data`, row(-k));
      await api('POST', `/v1/data-sources/${ds}/commit`, {
        append: true,
        entries: Array.from({ length: 2_000 }, (_, k) => ({ id: id(k * 3), data: { ...row(k), updated: 2 } })),
      });

      // After: streamed by the server, hashed and dropped by the client chunk by chunk.
      const url = `${server.url}/v1/data-sources/${ds}/versions/${oldVersion!.id}/data`;
      const read = async (query = '') => {
        const res = await fetch(url + query, { headers: { 'Auth-token': apiToken } });
        expect(res.status).toBe(200);
        const hash = createHash('sha256');
        let bytes = 0;
        const reader = res.body!.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          bytes += value.length;
          hash.update(value);
        }
        return { bytes, hash: hash.digest('hex') };
      };
      const after = await measure(() => read());
      const limited = await measure(() => read('?limit=20'));

      // Before: the old code path (every entry and every undo record in JS, the answer as one string).
      const oracleDb = openSqlite({ file });
      const dataVersion = (await oracleDb.get<{ data_version: number }>('SELECT data_version FROM data_source_versions WHERE id = ?', [oldVersion!.id]))!
        .data_version;
      const before = await measure(async () => {
        const text = JSON.stringify({ entries: rebuildVersion(ds, await loadEntries(oracleDb, ds), await changesAfter(oracleDb, ds, dataVersion)) });
        return { bytes: Buffer.byteLength(text), hash: createHash('sha256').update(text).digest('hex') };
      });
      await oracleDb.close();
      expect(after.result).toEqual(before.result);

      // Baseline: the same statement, bare (rows read and dropped).
      const bare = new BetterSqlite3(file, { readonly: true });
      const source = versionEntriesSource(ds, dataVersion);
      const statement = bare.prepare(`SELECT e.id, e.data, e.sort_order, e.created_at, e.updated_at FROM ${source.text} ORDER BY e.id`).raw(true);
      if (process.env.BENCH_PLAN)
        console.log(
          (bare.prepare(`EXPLAIN QUERY PLAN SELECT e.id FROM ${source.text} ORDER BY e.id`).all(...source.params) as { detail: string }[])
            .map((r) => r.detail)
            .join('\n'),
        );
      const bareRun = await measure(() => {
        let count = 0;
        for (const _ of statement.iterate(...source.params)) count++;
        return count;
      });
      const bareText = await measure(() => {
        let bytes = 0;
        for (const [id, data, order, createdAt, updatedAt] of statement.iterate(...source.params) as Iterable<[number, string, number, string, string]>)
          bytes +=
            `{"id":${id},"dataSourceId":${ds},"data":${data},"order":${order},"createdAt":${JSON.stringify(createdAt)},"updatedAt":${JSON.stringify(updatedAt)},"deletedAt":null},`
              .length;
        return bytes;
      });
      const plain = bare.prepare('SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id').raw(true);
      const plainRun = await measure(() => {
        let count = 0;
        for (const _ of plain.iterate(ds)) count++;
        return count;
      });
      bare.close();

      // Restore of the old version (rewrites the entries changed since, in SQL).
      let t = performance.now();
      await api('POST', `/v1/data-sources/${ds}/versions/${oldVersion!.id}/restore`);
      const restoreMs = performance.now() - t;
      t = performance.now();
      const restored = await read();
      const readAgainMs = performance.now() - t;
      expect(restored.bytes).toBeGreaterThan(0);
      await server.close();

      const count = bareRun.result;
      const lines = [
        `\n### An old version's data at ${n.toLocaleString('en')} entries (${count.toLocaleString('en')} in the version, ${(after.result.bytes / 1e6).toFixed(1)} MB answer; SQLite file, median of ${RUNS})`,
        '',
        '| case | wall ms | CPU ms | peak RSS above start | wall ÷ bare same SQL | CPU ÷ bare same SQL + text |',
        '| --- | --- | --- | --- | --- | --- |',
        `| after: GET …/versions/:id/data (SQL, streamed pages) | ${after.ms.toFixed(0)} | ${after.cpu.toFixed(0)} | ${after.peakMb.toFixed(0)} MB | ${(after.ms / bareRun.ms).toFixed(1)} | ${(after.cpu / bareText.cpu).toFixed(1)} |`,
        `| after: same with ?limit=20 | ${limited.ms.toFixed(0)} | ${limited.cpu.toFixed(0)} | ${limited.peakMb.toFixed(0)} MB | ${(limited.ms / bareRun.ms).toFixed(1)} | ${(limited.cpu / bareText.cpu).toFixed(1)} |`,
        `| before: rebuildVersion in JS + answer as one string (old path) | ${before.ms.toFixed(0)} | ${before.cpu.toFixed(0)} | ${before.peakMb.toFixed(0)} MB | ${(before.ms / bareRun.ms).toFixed(1)} | ${(before.cpu / bareText.cpu).toFixed(1)} |`,
        `| bare better-sqlite3: the same statement, rows read and dropped | ${bareRun.ms.toFixed(0)} | ${bareRun.cpu.toFixed(0)} | ${bareRun.peakMb.toFixed(0)} MB | ${(bareRun.ms / bareRun.ms).toFixed(1)} | ${(bareRun.cpu / bareText.cpu).toFixed(1)} |`,
        `| bare better-sqlite3: the same statement + each entry's answer text (dropped) | ${bareText.ms.toFixed(0)} | ${bareText.cpu.toFixed(0)} | ${bareText.peakMb.toFixed(0)} MB | ${(bareText.ms / bareRun.ms).toFixed(1)} | ${(bareText.cpu / bareText.cpu).toFixed(1)} |`,
        `| bare better-sqlite3: the current entries by id (no version), rows read | ${plainRun.ms.toFixed(0)} | ${plainRun.cpu.toFixed(0)} | ${plainRun.peakMb.toFixed(0)} MB | ${(plainRun.ms / bareRun.ms).toFixed(1)} | ${(plainRun.cpu / bareText.cpu).toFixed(1)} |`,
        `| restore of that version (POST …/restore, once) | ${restoreMs.toFixed(0)} | | | | |`,
        `| GET …/data of the version again after the restore (once) | ${readAgainMs.toFixed(0)} | | | | |`,
      ];
      console.log(lines.join('\n'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
}
