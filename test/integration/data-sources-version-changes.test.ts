import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSourceConnection, DataSourceEntry as Entry } from '../../src/index.js';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 14, "versions must not copy the whole data source on every change": a version records the data version it
 * stands for, every write records the prior state of what it touches, and a version is rebuilt on read. These
 * tests replay random writes of every kind through the public API, remember what each version must hold, and
 * compare every kept version (and a restore of it) with that, on both databases.
 */

/** A deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const byId = (entries: Entry[]) =>
  [...entries].sort((a, b) => a.id - b.id).map(({ id, data, order, createdAt, updatedAt }) => ({ id, data, order, createdAt, updatedAt }));

describe.each(ENTRY_CACHE_CASES)('data sources: versions rebuilt from changes (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { dataSourceVersions: 8, entryCacheEntries } });
  });
  afterAll(() => b.close());

  it('every kept version holds exactly the entries before its write, after random writes of every kind', async () => {
    const ds = await b.client.DataSources.create({ name: 'Rebuilt' });
    const conn: DataSourceConnection = await b.client.DataSources.connect(ds.id);
    const r = random(1414);
    const expected = new Map<number, ReturnType<typeof byId>>();
    /** Runs a bulk write; the version it creates must hold the entries as they were just before. */
    const bulk = async (write: () => Promise<unknown>) => {
      const before = byId(await conn.find());
      const newest = (await conn.versions())[0]?.id ?? 0;
      await write();
      const [version] = await conn.versions();
      if (version && version.id > newest) expected.set(version.id, before);
    };
    await bulk(() => conn.import(Array.from({ length: 30 }, (_, i) => ({ n: i, tag: `t${i % 3}` }))));
    for (let step = 0; step < 60; step++) {
      const all = await conn.find();
      const pick = () => all[Math.floor(r() * all.length)];
      const roll = r();
      if (roll < 0.2) await conn.insert({ n: 100 + step, nested: { a: [step] } });
      else if (roll < 0.35 && all.length) await conn.update(pick()!.id, { n: -step, tag: 'updated' });
      else if (roll < 0.45 && all.length) await conn.removeById(pick()!.id);
      else if (roll < 0.6 && all.length > 1) {
        const [updated, removed] = [all[0]!, all[all.length - 1]!];
        await bulk(() => conn.commit({ append: true, entries: [{ id: updated.id, data: { n: step } }, { data: { n: 1000 + step } }], delete: [removed.id] }));
      } else if (roll < 0.7) await bulk(() => conn.query({ type: 'delete', where: { n: { $gt: 50, $lt: 70 } } }));
      else if (roll < 0.78 && all.length > 2)
        await bulk(() => conn.commit({ entries: all.slice(1, 4).map((e) => ({ id: e.id, data: { ...e.data, replaced: step } })) }));
      else if (roll < 0.85) await bulk(() => conn.import([{ n: 2000 + step }], { append: true } as never));
      else if (roll < 0.92) {
        const versions = await conn.versions();
        const target = versions[Math.floor(r() * versions.length)];
        if (target) await bulk(() => conn.restore(target.id));
      } else await bulk(() => conn.import([{ n: 3000 + step }, { n: 3001 + step }]));
    }
    const kept = await conn.versions();
    expect(kept.length).toBe(8);
    let compared = 0;
    for (const version of kept) {
      const want = expected.get(version.id);
      if (!want) continue;
      expect(byId(await conn.versionEntries(version.id)), `version ${version.id} (${version.data.action})`).toEqual(want);
      expect(version.data.entries.count).toBe(want.length);
      compared++;
    }
    expect(compared).toBe(8);
    // Restoring the oldest kept version brings exactly its entries back (ids, order and timestamps too).
    const oldest = kept[kept.length - 1]!;
    await conn.restore(oldest.id);
    expect(byId(await conn.find())).toEqual(expected.get(oldest.id));
  });

  // With dataDir, the test backend is a SQLite file on both suites' runs: the file is read to count what is stored.
  it('a version taken by a one-entry commit costs one undo record, not a copy of the data set (SQLite file)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-versions-'));
    const fileBackend = await startTestBackend({ dataDir: dir });
    try {
      const ds = await fileBackend.client.DataSources.create({ name: 'Cheap' });
      const conn = await fileBackend.client.DataSources.connect(ds.id);
      await conn.insert({ n: 0 }); // no version yet: nothing is recorded
      const count = (sql: string) => {
        const db = new Database(join(dir, 'runtime.sqlite'), { readonly: true });
        try {
          return (db.prepare(sql).get() as { n: number }).n;
        } finally {
          db.close();
        }
      };
      expect(count('SELECT COUNT(*) AS n FROM data_source_changes')).toBe(0);
      await conn.import(
        Array.from({ length: 2000 }, (_, i) => ({ n: i })),
        { append: true } as never,
      );
      // The import's version (of the 1 entry before it) is rebuilt by undoing 2,000 inserts: one record per batch of 200.
      expect(count('SELECT COUNT(*) AS n FROM data_source_changes')).toBe(10);
      for (let i = 0; i < 3; i++) await conn.commit({ append: true, entries: [{ data: { n: -i } }] });
      expect(count('SELECT COUNT(*) AS n FROM data_source_changes')).toBe(13);
      expect(count('SELECT COUNT(*) AS n FROM data_source_snapshots')).toBe(0);
      expect(count('SELECT COUNT(*) AS n FROM data_source_versions')).toBe(4);
      const [newest] = await conn.versions();
      expect((await conn.versionEntries(newest!.id)).length).toBe(2003);
    } finally {
      await fileBackend.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // A version from before migration 0010 has a snapshot and no data_version: written straight into the file.
  it('a version kept as a snapshot is read and restored from it, and the restore is undone from changes (SQLite file)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iar-versions-'));
    const fileBackend = await startTestBackend({ dataDir: dir, limits: { entryCacheEntries } });
    try {
      const ds = await fileBackend.client.DataSources.create({ name: 'Legacy' });
      const conn = await fileBackend.client.DataSources.connect(ds.id);
      const [a, b2] = [await conn.insert({ n: 1 }), await conn.insert({ n: 2 })];
      await conn.insert({ n: 3 });
      expect(await conn.versions()).toEqual([]);
      // The snapshot: the first entry as it is, the second as it was, the third absent.
      const at = '2020-01-01T00:00:00.000Z';
      const snapshot = [
        { id: a!.id, dataSourceId: ds.id, data: { n: 1 }, order: a!.order, createdAt: a!.createdAt, updatedAt: a!.updatedAt, deletedAt: null },
        { id: b2!.id, dataSourceId: ds.id, data: { n: 20, old: true }, order: b2!.order, createdAt: at, updatedAt: at, deletedAt: null },
      ];
      const file = new Database(join(dir, 'runtime.sqlite'));
      try {
        file.prepare('INSERT INTO data_source_snapshots (key, data) VALUES (?, ?)').run('legacy-1', JSON.stringify(snapshot));
        file
          .prepare(
            `INSERT INTO data_source_versions (data_source_id, action, columns, entry_count, snapshot_key, user_id, user_name, data_version, created_at, updated_at)
             VALUES (?, 'commit', '["n","old"]', 2, 'legacy-1', NULL, 'System', NULL, ?, ?)`,
          )
          .run(ds.id, at, at);
      } finally {
        file.close();
      }
      const [legacy] = await conn.versions();
      expect(byId(await conn.versionEntries(legacy!.id))).toEqual(byId(snapshot as never));
      expect((await conn.versionEntries(legacy!.id, { where: { n: { $gt: 5 } }, limit: 1 })).map((e) => e.id)).toEqual([b2!.id]);
      const before = byId(await conn.find());
      const restored = await conn.restore(legacy!.id);
      expect(restored.restored.count).toBe(2);
      expect(byId(await conn.find())).toEqual(byId(snapshot as never));
      // The backup is the only version rebuilt from changes: the restore's writes were recorded for it.
      expect(byId(await conn.versionEntries(restored.backup.id))).toEqual(before);
      await conn.restore(restored.backup.id);
      expect(byId(await conn.find())).toEqual(before);
    } finally {
      await fileBackend.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
