import pg from 'pg';
import { expect, it } from 'vitest';
import { changesAfter } from '../../src/server/data-sources/store/changes.js';
import { loadEntries } from '../../src/server/data-sources/store/entries.js';
import { versionEntriesSource } from '../../src/server/data-sources/store/version-rows.js';
import { rebuildVersion } from '../../src/server/data-sources/versions.js';
import { openPostgres } from '../../src/server/db/postgres.js';
import { type RunningServer, startServer } from '../../src/server/index.js';
import { startClusterWithDatabase } from '../helpers/postgres.js';
import { BENCH_CITIES, benchApi, benchDataSource } from './bench-api.js';
import { TABLE_HEAD, VERSION_RUNS, hashText, measure, readStreamed, tableRow, writeHistory } from './version-history.js';

/**
 * version-data.bench.ts on PostgreSQL (a throwaway cluster, test/helpers/postgres.ts): the same history over HTTP
 * and the same read of the old version's data (`GET …/versions/:id/data`: the database computes the version,
 * store/version-rows.ts, kept by a `WITH HOLD` cursor and streamed in pages), beside the old code path (versions.ts
 * `rebuildVersion` over every entry and undo record, the answer as one string) and, as the baseline, the same
 * statement run bare through a `pg` client and a cursor read in batches of 2,000 rows (rows read and dropped; with
 * each entry's answer text built). The rows are one `INSERT … SELECT generate_series` whose JSON text is exactly
 * what `JSON.stringify` writes for the SQLite bench's rows, then `VACUUM ANALYZE`; the server restarts after
 * loading (nothing cached, entry cache off). `BENCH_SIZES` as the other SQL benches (default 300,000).
 */
const SIZES = (process.env.BENCH_SIZES ?? '300000').split(',').map(Number);
const BATCH = 2_000;

/** `?` placeholders of the translator's SQL as `$n` (its text holds no other `?`). */
const numbered = (text: string) => {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
};

/** Reads `text` through a cursor in batches, calling `each` on every row (nothing kept). */
async function readCursor(client: pg.Client, text: string, params: readonly unknown[], each: (row: unknown[]) => void): Promise<number> {
  let count = 0;
  await client.query('BEGIN READ ONLY');
  try {
    await client.query({ text: `DECLARE bench_rows NO SCROLL CURSOR FOR ${numbered(text)}`, values: params as unknown[] });
    for (;;) {
      const { rows } = await client.query({ text: `FETCH ${BATCH} FROM bench_rows`, rowMode: 'array' });
      for (const row of rows) each(row as unknown[]);
      count += rows.length;
      if (rows.length < BATCH) break;
    }
  } finally {
    await client.query('COMMIT');
  }
  return count;
}

for (const n of SIZES) {
  it(`an old version's data at ${n.toLocaleString('en')} entries (PostgreSQL)`, async () => {
    const { cluster, url } = await startClusterWithDatabase('iar_verbench');
    const options = { port: 0, databaseUrl: url, log: false, limits: { bodyBytes: 64 * 1024 * 1024, entryCacheEntries: 0 } };
    const db = openPostgres({ url, max: 2 });
    const bare = new pg.Client({ connectionString: url });
    let server: RunningServer | undefined;
    try {
      const { ds, apiToken } = await benchDataSource(options);
      const cities = `ARRAY[${BENCH_CITIES.map((c) => `'${c}'`).join(', ')}]`;
      // The text JSON.stringify(benchRow(i)) gives, key order included.
      const text = `'{"name":"Person ' || i || '","email":"person' || i || '@example.com","age":' || (i % 90) || ',"city":"' || (${cities})[i % 8 + 1] || '","active":' || (i % 3 <> 0)::text || '}'`;
      await db.query(
        `INSERT INTO data_source_entries (data_source_id, data, sort_order, created_at, updated_at)
         SELECT ${ds}, ${text}, i, t, t
         FROM generate_series(0, ${n - 1}) i, LATERAL (SELECT to_char(timestamp '2024-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t) s`,
      );
      await db.query(`UPDATE data_sources SET data_version = data_version + 1 WHERE id = ${ds}`);
      await db.query('VACUUM ANALYZE data_source_entries');
      const firstId = Number((await db.query<{ id: number }>('SELECT MIN(id) AS id FROM data_source_entries WHERE data_source_id = $1', [ds]))[0]!.id);
      const running = await startServer(options);
      server = running;
      const api = benchApi(() => running, apiToken);
      const oldVersion = await writeHistory(api, ds, n, firstId);

      // After: streamed by the server, hashed and dropped by the client chunk by chunk.
      const versionUrl = `${running.url}/v1/data-sources/${ds}/versions/${oldVersion}/data`;
      const after = await measure(() => readStreamed(versionUrl, apiToken));
      const limited = await measure(() => readStreamed(`${versionUrl}?limit=20`, apiToken));

      // Before: the old code path (every entry and every undo record in JS, the answer as one string).
      const dataVersion = Number(
        (await db.query<{ data_version: number }>('SELECT data_version FROM data_source_versions WHERE id = $1', [oldVersion]))[0]!.data_version,
      );
      const before = await measure(async () =>
        hashText(JSON.stringify({ entries: rebuildVersion(ds, await loadEntries(db, ds), await changesAfter(db, ds, dataVersion)) })),
      );
      expect(after.result).toEqual(before.result);

      // Baseline: the same statement, bare, through a cursor (rows read and dropped; then with each answer text).
      await bare.connect();
      const source = versionEntriesSource(ds, dataVersion);
      const statement = `SELECT e.id, e.data, e.sort_order, e.created_at, e.updated_at FROM ${source.text} ORDER BY e.id`;
      const bareRun = await measure(() => readCursor(bare, statement, source.params, () => undefined));
      const bareText = await measure(async () => {
        let bytes = 0;
        await readCursor(bare, statement, source.params, ([id, data, order, createdAt, updatedAt]) => {
          bytes +=
            `{"id":${id},"dataSourceId":${ds},"data":${data},"order":${order},"createdAt":${JSON.stringify(createdAt)},"updatedAt":${JSON.stringify(updatedAt)},"deletedAt":null},`
              .length;
        });
        return bytes;
      });
      const plain = 'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id';
      const plainRun = await measure(() => readCursor(bare, plain, [ds], () => undefined));

      // Restore of the old version (rewrites the entries changed since, in SQL).
      let t = performance.now();
      await api('POST', `/v1/data-sources/${ds}/versions/${oldVersion}/restore`);
      const restoreMs = performance.now() - t;
      t = performance.now();
      const restored = await readStreamed(versionUrl, apiToken);
      const readAgainMs = performance.now() - t;
      expect(restored.bytes).toBeGreaterThan(0);

      console.log(
        [
          `\n### An old version's data at ${n.toLocaleString('en')} entries (${bareRun.result.toLocaleString('en')} in the version, ${(after.result.bytes / 1e6).toFixed(1)} MB answer; PostgreSQL, median of ${VERSION_RUNS})`,
          '',
          ...TABLE_HEAD,
          tableRow('after: GET …/versions/:id/data (SQL, streamed pages)', after, bareRun, bareText),
          tableRow('after: same with ?limit=20', limited, bareRun, bareText),
          tableRow('before: rebuildVersion in JS + answer as one string (old path)', before, bareRun, bareText),
          tableRow('bare pg cursor: the same statement, rows read and dropped', bareRun, bareRun, bareText),
          tableRow("bare pg cursor: the same statement + each entry's answer text (dropped)", bareText, bareRun, bareText),
          tableRow('bare pg cursor: the current entries by id (no version), rows read', plainRun, bareRun, bareText),
          `| restore of that version (POST …/restore, once) | ${restoreMs.toFixed(0)} | | | | |`,
          `| GET …/data of the version again after the restore (once) | ${readAgainMs.toFixed(0)} | | | | |`,
        ].join('\n'),
      );
    } finally {
      await server?.close();
      await bare.end().catch(() => undefined);
      await db.close();
      cluster.stop();
    }
  }, 1_800_000);
}
