import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { changesAfter } from '../../src/server/data-sources/store/changes.js';
import { loadEntries } from '../../src/server/data-sources/store/entries.js';
import { versionEntriesSource } from '../../src/server/data-sources/store/version-rows.js';
import { rebuildVersion } from '../../src/server/data-sources/versions.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { benchRow, loadedBenchServer } from './bench-api.js';
import { TABLE_HEAD, VERSION_RUNS, hashText, measure, readStreamed, tableRow, writeHistory } from './version-history.js';

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

for (const n of SIZES) {
  it(`an old version's data at ${n.toLocaleString('en')} entries (SQLite file)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-verbench-'));
    const options = { port: 0, dataDir: dir, log: false, limits: { bodyBytes: 64 * 1024 * 1024, entryCacheEntries: 0 } };
    try {
      // Rows written straight into the file, then a fresh server (nothing cached).
      let firstId = 0;
      const { ds, file, server, api, apiToken } = await loadedBenchServer(options, n, benchRow, (load, id) => {
        firstId = (load.prepare('SELECT MIN(id) AS id FROM data_source_entries WHERE data_source_id = ?').get(id) as { id: number }).id;
      });

      const oldVersion = await writeHistory(api, ds, n, firstId);

      // After: streamed by the server, hashed and dropped by the client chunk by chunk.
      const url = `${server.url}/v1/data-sources/${ds}/versions/${oldVersion}/data`;
      const read = (query = '') => readStreamed(url + query, apiToken);
      const after = await measure(() => read());
      const limited = await measure(() => read('?limit=20'));

      // Before: the old code path (every entry and every undo record in JS, the answer as one string).
      const oracleDb = openSqlite({ file });
      const dataVersion = (await oracleDb.get<{ data_version: number }>('SELECT data_version FROM data_source_versions WHERE id = ?', [oldVersion]))!
        .data_version;
      const before = await measure(async () => {
        return hashText(JSON.stringify({ entries: rebuildVersion(ds, await loadEntries(oracleDb, ds), await changesAfter(oracleDb, ds, dataVersion)) }));
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
      await api('POST', `/v1/data-sources/${ds}/versions/${oldVersion}/restore`);
      const restoreMs = performance.now() - t;
      t = performance.now();
      const restored = await read();
      const readAgainMs = performance.now() - t;
      expect(restored.bytes).toBeGreaterThan(0);
      await server.close();

      const count = bareRun.result;
      const lines = [
        `\n### An old version's data at ${n.toLocaleString('en')} entries (${count.toLocaleString('en')} in the version, ${(after.result.bytes / 1e6).toFixed(1)} MB answer; SQLite file, median of ${VERSION_RUNS})`,
        '',
        ...TABLE_HEAD,
        tableRow('after: GET …/versions/:id/data (SQL, streamed pages)', after, bareRun, bareText),
        tableRow('after: same with ?limit=20', limited, bareRun, bareText),
        tableRow('before: rebuildVersion in JS + answer as one string (old path)', before, bareRun, bareText),
        tableRow('bare better-sqlite3: the same statement, rows read and dropped', bareRun, bareRun, bareText),
        tableRow("bare better-sqlite3: the same statement + each entry's answer text (dropped)", bareText, bareRun, bareText),
        tableRow('bare better-sqlite3: the current entries by id (no version), rows read', plainRun, bareRun, bareText),
        `| restore of that version (POST …/restore, once) | ${restoreMs.toFixed(0)} | | | | |`,
        `| GET …/data of the version again after the restore (once) | ${readAgainMs.toFixed(0)} | | | | |`,
      ];
      console.log(lines.join('\n'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
}
