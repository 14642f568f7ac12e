import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSourceConnection } from '../../src/index.js';
import type { Database } from '../../src/server/db/database.js';
import { openPostgres } from '../../src/server/db/postgres.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { compileWhere } from '../../src/server/data-sources/engine.js';
import { withoutDataPrefix } from '../../src/server/data-sources/query/data-prefix.js';
import { translateWhere } from '../../src/server/data-sources/sql/where.js';
import { changesAfter } from '../../src/server/data-sources/store/changes.js';
import { loadEntries } from '../../src/server/data-sources/store/entries.js';
import type { EntryView } from '../../src/server/data-sources/types.js';
import { rebuildVersion } from '../../src/server/data-sources/versions.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { entryData, seededRandom, where } from '../helpers/query-generator.js';
import { ENTRY_CACHE_CASES, startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/**
 * A version's data computed by the database (store/version-rows.ts) against the JS rebuild it replaced
 * (versions.ts `rebuildVersion`, the oracle): random histories of every kind of write (single inserts, batches of
 * fresh inserts, updates, deletes, commits, imports, query deletes, restores) through the real server over HTTP,
 * then every kept version read over HTTP, whole, limited and filtered by generated `where`s (translated to SQL or
 * left to the JS evaluator), compared with the oracle over the same database. Also against the entries listed
 * just before each version's write. SQLite, and PostgreSQL with IAR_TEST_DB=postgres.
 */
const SEED = 14_2026;
const STEPS = 110;

describe.each(ENTRY_CACHE_CASES)(`version data in SQL, differential against the JS rebuild (${testEngine}, entry cache $cache)`, ({ entryCacheEntries }) => {
  let b: TestBackend;
  let oracleDb: Database;
  let cleanup: () => Promise<void>;
  let now = Date.parse('2024-05-01T08:00:00.000Z');
  beforeAll(async () => {
    const limits = { dataSourceVersions: 12, entryCacheEntries };
    if (testEngine === 'postgres') {
      const database = await createTestDatabase('verdata');
      b = await startTestBackend({ databaseUrl: database.url, clock: () => now, limits });
      oracleDb = openPostgres({ url: database.url, max: 2 });
      cleanup = async () => {
        await oracleDb.close();
        await b.close();
        await database.drop();
      };
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'iar-verdata-'));
      b = await startTestBackend({ dataDir: dir, clock: () => now, limits });
      oracleDb = openSqlite({ file: join(dir, 'runtime.sqlite') });
      cleanup = async () => {
        await oracleDb.close();
        await b.close();
        rmSync(dir, { recursive: true, force: true });
      };
    }
  });
  afterAll(() => cleanup?.());

  /** The oracle: the version rebuilt in JS from the entries now and every undo record after it. */
  const rebuilt = async (ds: number, versionId: number): Promise<EntryView[]> => {
    const row = await oracleDb.get<{ data_version: number | null }>('SELECT data_version FROM data_source_versions WHERE data_source_id = ? AND id = ?', [
      ds,
      versionId,
    ]);
    expect(row?.data_version ?? null, `version ${versionId} is rebuilt from changes`).not.toBeNull();
    const dataVersion = Number(row!.data_version);
    return rebuildVersion(ds, await loadEntries(oracleDb, ds), await changesAfter(oracleDb, ds, dataVersion));
  };
  const read = async (ds: number, versionId: number, body?: Record<string, unknown>) => {
    const res = body
      ? await b.api('POST', `/v1/data-sources/${ds}/versions/${versionId}/data`, { json: body })
      : await b.api('GET', `/v1/data-sources/${ds}/versions/${versionId}/data`);
    return { status: res.status, entries: res.body?.entries as EntryView[] };
  };

  it('every kept version reads as the JS rebuild, whole, limited and filtered, after random histories', async () => {
    const rng = seededRandom(SEED + entryCacheEntries);
    const ds = (await b.client.DataSources.create({ name: `VersionDifferential-${entryCacheEntries}` })).id;
    const conn: DataSourceConnection = await b.client.DataSources.connect(ds);
    const listed = async () => (await b.api('GET', `/v1/data-sources/${ds}/data`)).body.entries as EntryView[];
    const byId = (entries: readonly EntryView[]) =>
      [...entries].sort((x, y) => x.id - y.id).map(({ id, data, order, createdAt, updatedAt }) => ({ id, data, order, createdAt, updatedAt }));
    const before = new Map<number, ReturnType<typeof byId>>();
    /** A bulk write: the version it takes must hold the entries listed just before it. */
    const bulk = async (write: () => Promise<unknown>) => {
      const entries = byId(await listed());
      const newest = (await conn.versions())[0]?.id ?? 0;
      await write();
      const [version] = await conn.versions();
      if (version && version.id > newest) before.set(version.id, entries);
    };
    const batch = (n: number) => Array.from({ length: n }, () => entryData(rng));
    await bulk(() => conn.import(batch(60)));
    for (let step = 0; step < STEPS; step++) {
      now += 1_000 + Math.floor(rng() * 60_000);
      const all = await listed();
      const pick = () => all[Math.floor(rng() * all.length)]!;
      const roll = rng();
      if (roll < 0.18) await conn.insert(entryData(rng));
      else if (roll < 0.34 && all.length) await conn.update(pick().id, entryData(rng));
      else if (roll < 0.44 && all.length) await conn.removeById(pick().id);
      else if (roll < 0.56) await bulk(() => conn.import(batch(1 + Math.floor(rng() * 250)), { append: true } as never));
      else if (roll < 0.68 && all.length > 2) {
        // Distinct entries: up to 3 updated, one deleted.
        const ids = [...new Set(Array.from({ length: 4 }, () => pick().id))];
        const removed = ids.pop()!;
        await bulk(() =>
          conn.commit({
            append: true,
            entries: [...ids.map((id) => ({ id, data: entryData(rng) })), ...batch(Math.floor(rng() * 5)).map((data) => ({ data }))],
            delete: [removed],
          }),
        );
      } else if (roll < 0.74 && all.length > 2)
        await bulk(() => conn.commit({ entries: [...all.slice(0, 5).map((e) => ({ id: e.id, data: entryData(rng) })), { data: entryData(rng) }] }));
      else if (roll < 0.82) await bulk(() => conn.query({ type: 'delete', where: { n: { $gt: 1, $lt: 50 } } }));
      else if (roll < 0.9) {
        const versions = await conn.versions();
        const target = versions[Math.floor(rng() * versions.length)];
        if (target) await bulk(() => conn.restore(target.id));
      } else if (roll < 0.95) await bulk(() => conn.import(batch(20 + Math.floor(rng() * 40))));
      else if (all.length) {
        // Updates of fresh entries: an id of a batch of inserts then also has undo records of its own.
        const fresh = all.slice(-5);
        for (const e of fresh) await conn.update(e.id, { ...e.data, touched: step });
      }
    }
    const kept = await conn.versions();
    expect(kept.length).toBe(12);
    let compared = 0;
    let translated = 0;
    let filtered = 0;
    for (const version of kept) {
      const oracle = await rebuilt(ds, version.id);
      const whole = await read(ds, version.id);
      expect(whole, `version ${version.id} (${version.data.action})`).toEqual({ status: 200, entries: oracle });
      // Byte for byte what JSON.stringify writes (the pages are built by the database).
      const raw = await fetch(`${b.url}/v1/data-sources/${ds}/versions/${version.id}/data`, { headers: { 'Auth-token': b.server.bootstrap.apiToken } });
      expect(await raw.text()).toBe(JSON.stringify({ entries: oracle }));
      expect(oracle.length).toBe(version.data.entries.count);
      const want = before.get(version.id);
      if (want) {
        expect(byId(whole.entries)).toEqual(want);
        compared++;
      }
      const limit = 1 + Math.floor(rng() * 40);
      const limited = await b.api('GET', `/v1/data-sources/${ds}/versions/${version.id}/data?limit=${limit}`);
      expect(limited.body.entries).toEqual(oracle.slice(0, limit));
      const stamps = [...new Set(oracle.flatMap((e) => [e.createdAt, e.updatedAt]))].sort();
      const maxId = Math.max(0, ...oracle.map((e) => e.id));
      for (let i = 0; i < 12; i++) {
        const body: Record<string, unknown> = { where: where(rng, { maxId, times: [...stamps, '2024-05-01', '2030-01-01'] }) };
        if (rng() < 0.4) body.limit = Math.floor(rng() * 10);
        if (translateWhere(withoutDataPrefix(body.where)) !== null) translated++;
        const test = compileWhere(body.where);
        const matches = oracle.filter((e) => test(e));
        if (matches.length > 0) filtered++;
        const expected = body.limit ? matches.slice(0, body.limit as number) : matches;
        expect({ version: version.id, body, ...(await read(ds, version.id, body)) }).toEqual({ version: version.id, body, status: 200, entries: expected });
      }
    }
    expect(compared).toBeGreaterThanOrEqual(10);
    // Both paths ran: most wheres in SQL, some on the JS evaluator; and they matched something.
    expect(translated).toBeGreaterThan(kept.length * 6);
    expect(translated).toBeLessThan(kept.length * 12);
    expect(filtered).toBeGreaterThan(kept.length * 3);
  }, 240_000);

  it('a where over a value the database cannot read (a NUL in a string: not jsonb) is decided by the JS evaluator', async () => {
    const ds = (await b.client.DataSources.create({ name: `VersionNul-${entryCacheEntries}` })).id;
    const entries = [
      { s: 'a\u0000b', n: 1 },
      { s: 'c', n: 2 },
      { s: 'd', n: 1 },
    ];
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries } })).status).toBe(200);
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { entries: [] } })).status).toBe(200);
    const versions = (await b.api('GET', `/v1/data-sources/${ds}/versions`)).body.versions as { id: number }[];
    const read = await b.api('POST', `/v1/data-sources/${ds}/versions/${versions[0]!.id}/data`, { json: { where: { n: 1 }, limit: 5 } });
    expect(read.status).toBe(200);
    expect((read.body.entries as EntryView[]).map((e) => e.data)).toEqual([entries[0], entries[2]]);
    expect(translateWhere({ n: 1 })).not.toBeNull();
  });
});
