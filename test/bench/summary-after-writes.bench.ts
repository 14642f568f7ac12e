import Database from 'better-sqlite3';
import { it } from 'vitest';
import { startServer } from '../../src/server/index.js';
import { benchApi } from './bench-api.js';

/**
 * Issue 14, "a commit of N changes is O(changes)": an append commit of one entry (`returnEntries: false`) right after
 * a single-entry insert, update or delete, at `BENCH_ENTRIES` (default 300,000) entries, a data source larger than
 * the entry cache (so nothing holds it). The commit records the data set's count and columns in its version: from
 * the remembered summary when the write before moved it on (summary.ts), else read from every entry. Baseline in
 * the same run, bare better-sqlite3 on a table of the same rows: inserting one row in a transaction.
 */
const N = Number(process.env.BENCH_ENTRIES ?? 300_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const row = (i: number) => ({ name: `Person ${i}`, email: `person${i}@example.com`, age: i % 90, city: ['Cork', 'Oslo', 'Lima'][i % 3], active: i % 3 !== 0 });

it(`an append commit after a single-entry write at ${N.toLocaleString('en')} entries`, async () => {
  const server = await startServer({ port: 0, memory: true, log: false, limits: { bodyBytes: 64 * 1024 * 1024 } });
  try {
    const { appId, apiToken } = server.bootstrap;
    const api = benchApi(() => server, apiToken);
    const ds = (await api('POST', `/v1/data-sources?appId=${appId}`, { name: 'Large' })).dataSource.id as number;
    for (let start = 0; start < N; start += 100_000)
      await api('POST', `/v1/data-sources/${ds}/data`, {
        append: true,
        entries: Array.from({ length: Math.min(100_000, N - start) }, (_, i) => row(start + i)),
      });
    const page = (await api('POST', `/v1/data-sources/${ds}/data/query`, { limit: 2 * ROUNDS + 2, order: [['id', 'ASC']] })).entries as { id: number }[];
    const commit = () => api('POST', `/v1/data-sources/${ds}/commit`, { append: true, returnEntries: false, entries: [{ data: row(-1) }] });
    await commit();
    const rounds: Record<'insert' | 'update' | 'delete', { write: number[]; commit: number[] }> = {
      insert: { write: [], commit: [] },
      update: { write: [], commit: [] },
      delete: { write: [], commit: [] },
    };
    let next = 0;
    const writes = {
      insert: () => api('PUT', `/v1/data-sources/${ds}/data`, row(-2)),
      update: () => api('PUT', `/v1/data-sources/${ds}/data/${page[next++]!.id}`, { age: 1 }),
      delete: () => api('DELETE', `/v1/data-sources/${ds}/data/${page[next++]!.id}`),
    };
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of ['insert', 'update', 'delete'] as const) {
        let t = performance.now();
        await writes[kind]();
        rounds[kind].write.push(performance.now() - t);
        t = performance.now();
        await commit();
        rounds[kind].commit.push(performance.now() - t);
      }
    }
    // Bare baseline: one row inserted in a transaction into a table of the same rows.
    const bare = new Database(':memory:');
    bare.exec('CREATE TABLE e (id INTEGER PRIMARY KEY, ds INTEGER, data TEXT)');
    const insert = bare.prepare('INSERT INTO e (ds, data) VALUES (1, ?)');
    bare.transaction(() => {
      for (let i = 0; i < N; i++) insert.run(JSON.stringify(row(i)));
    })();
    const bareMs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t = performance.now();
      bare.transaction(() => insert.run(JSON.stringify(row(-1))))();
      bareMs.push(performance.now() - t);
    }
    bare.close();
    const f = (ms: number) => `${ms.toFixed(2)} ms`;
    console.log(
      [
        `### An append commit after a single-entry write, ${N.toLocaleString('en')} entries (SQLite in memory, median of ${ROUNDS})`,
        '| write before the commit | the write | the append commit after it | bare SQLite: insert one row |',
        '| --- | --- | --- | --- |',
        ...(['insert', 'update', 'delete'] as const).map(
          (kind) => `| ${kind} | ${f(median(rounds[kind].write))} | ${f(median(rounds[kind].commit))} | ${f(median(bareMs))} |`,
        ),
      ].join('\n'),
    );
  } finally {
    await server.close();
  }
}, 600_000);
