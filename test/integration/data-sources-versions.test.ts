import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

describe.each(ENTRY_CACHE_CASES)('data sources: versions (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { dataSourceVersions: 3, entryCacheEntries } });
  });
  afterAll(() => b.close());

  it('snapshots the data before import, truncate, commit, query delete and restore; restores round-trip', async () => {
    const ds = await b.client.DataSources.create({ name: 'Versioned' });
    const conn = await b.client.DataSources.connect(ds.id);
    await conn.import([{ n: 1 }, { n: 2 }]); // snapshot of [] (import)
    const v1State = await conn.find();
    await conn.commit({ append: true, entries: [{ data: { n: 3 } }] }); // snapshot of [1,2] (commit)
    let versions = await conn.versions();
    expect(versions.map((v) => v.data.action)).toEqual(['commit', 'import']);
    const commitVersion = versions[0]!;
    expect(commitVersion).toMatchObject({ dataSourceId: ds.id, pageId: null, data: { columns: ['n'], entries: { count: 2 } } });
    expect(commitVersion.data.entries.key).toMatch(new RegExp(`^data-sources/${ds.id}/`));
    expect(commitVersion.user.fullName).toBe('Default API token');

    const raw = await b.api('GET', `/v1/data-sources/${ds.id}/versions/${commitVersion.id}/data?limit=1`);
    expect(raw.status).toBe(200);
    expect(raw.body.entries).toHaveLength(1);
    const filtered = await conn.versionEntries(commitVersion.id, { where: { n: 2 } });
    expect(filtered.map((e) => e.data)).toEqual([{ n: 2 }]);
    // where only with POST: a GET with one is refused, not answered unfiltered
    const getWhere = await b.api('GET', `/v1/data-sources/${ds.id}/versions/${commitVersion.id}/data?where=${encodeURIComponent('{"n":2}')}`);
    expect(getWhere.status).toBe(400);
    expect(getWhere.body.error.code).toBe('UNSUPPORTED_PARAMETER');
    const badWhere = await b.api('POST', `/v1/data-sources/${ds.id}/versions/${commitVersion.id}/data`, { json: { where: { $where: 'x' } } });
    expect(badWhere.status).toBe(400);

    const restored = await conn.restore(commitVersion.id);
    expect(restored.restored).toEqual({ versionId: commitVersion.id, count: 2 });
    expect(restored.backup.data).toMatchObject({ action: 'restore', entries: { count: 3 } });
    expect(await conn.find()).toEqual(v1State); // same ids, data, order and timestamps

    // restoring the backup undoes the restore
    await conn.restore(restored.backup.id);
    expect((await conn.find()).map((e) => e.data.n).sort()).toEqual([1, 2, 3]);

    await conn.query({ type: 'delete', where: { n: 3 } });
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { entries: [] } });
    versions = await conn.versions();
    // keeps only the newest 3 (limits.dataSourceVersions)
    expect(versions.map((v) => v.data.action)).toEqual(['truncate', 'delete', 'restore']);
    const gone = await b.api('GET', `/v1/data-sources/${ds.id}/versions/${commitVersion.id}/data`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('VERSION_NOT_FOUND');
    expect((await b.api('POST', `/v1/data-sources/${ds.id}/versions/${commitVersion.id}/restore`)).status).toBe(404);
    expect((await b.api('GET', `/v1/data-sources/${ds.id}/versions/abc/data`)).status).toBe(400);
    expect((await b.api('POST', `/v1/data-sources/${ds.id}/versions/${versions[0]!.id}/data`, { json: { limit: -1 } })).status).toBe(400);
  });

  it('an append import records the count and columns before it and appends after every entry', async () => {
    const ds = await b.client.DataSources.create({ name: `Appended-${entryCacheEntries}` });
    const conn = await b.client.DataSources.connect(ds.id);
    await conn.import([{ a: 1 }, { b: 2 }]);
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { append: true, entries: [{ c: 3 }] } });
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { append: true, entries: [{ d: 4 }, { e: 5 }] } });
    const versions = await conn.versions();
    expect(versions.map((v) => [v.data.action, v.data.entries.count, v.data.columns])).toEqual([
      ['import', 3, ['a', 'b', 'c']],
      ['import', 2, ['a', 'b']],
      ['import', 0, []],
    ]);
    expect((await conn.find()).map((e) => Object.keys(e.data)[0])).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect((await conn.find()).map((e) => e.order)).toEqual([0, 1, 2, 3, 4]);
  });

  it('versions and appends stay exact through mixed writes (inserts, appends, a removal)', async () => {
    const ds = await b.client.DataSources.create({ name: `Mixed-${entryCacheEntries}` });
    const conn = await b.client.DataSources.connect(ds.id);
    await conn.import([{ a: 1 }]);
    await conn.commit({ append: true, entries: [{ data: { b: 2 } }] });
    await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { json: { c: 3 } }); // order 0, no version
    await conn.commit({ append: true, entries: [{ data: { d: 4 } }] });
    const bId = (await conn.find({ where: { b: 2 } }))[0]!.id;
    await conn.commit({ append: true, entries: [], delete: [bId] });
    await conn.commit({ append: true, entries: [{ data: { e: 5 } }] }); // the column b is gone
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { append: true, entries: [{ f: 6 }] } });
    const versions = await conn.versions(); // the newest 3 (limits.dataSourceVersions)
    expect(versions.map((v) => [v.data.action, v.data.entries.count, v.data.columns])).toEqual([
      ['import', 4, ['a', 'c', 'd', 'e']],
      ['commit', 3, ['a', 'c', 'd']],
      ['commit', 4, ['a', 'b', 'c', 'd']],
    ]);
    const found = await conn.find();
    expect(found.map((e) => [Object.keys(e.data)[0], e.order])).toEqual([
      ['c', 0],
      ['a', 0],
      ['d', 2],
      ['e', 3],
      ['f', 4],
    ]);
  });

  it('the columns of a version come from every entry, past one page of the scan (5,000 rows)', async () => {
    const ds = await b.client.DataSources.create({ name: `Scanned-${entryCacheEntries}` });
    const rows: Record<string, unknown>[] = Array.from({ length: 5_001 }, (_, i) => ({ n: i }));
    rows[5_000] = { n: 5_000, late: true };
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { entries: rows } });
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { append: true, entries: [{ n: -1 }] } });
    const [latest] = await (await b.client.DataSources.connect(ds.id)).versions();
    expect(latest!.data).toMatchObject({ action: 'import', columns: ['n', 'late'], entries: { count: 5_001 } });
  });

  it('does not share versions between data sources', async () => {
    const a = await b.client.DataSources.create({ name: 'VA' });
    const other = await b.client.DataSources.create({ name: 'VB' });
    await (await b.client.DataSources.connect(a.id)).import([{ x: 1 }]);
    const [version] = await (await b.client.DataSources.connect(a.id)).versions();
    const res = await b.api('POST', `/v1/data-sources/${other.id}/versions/${version!.id}/restore`);
    expect(res.status).toBe(404);
  });
});
