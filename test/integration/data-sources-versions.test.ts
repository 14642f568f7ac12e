import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

describe('data sources: versions', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { dataSourceVersions: 3 } });
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

  it('does not share versions between data sources', async () => {
    const a = await b.client.DataSources.create({ name: 'VA' });
    const other = await b.client.DataSources.create({ name: 'VB' });
    await (await b.client.DataSources.connect(a.id)).import([{ x: 1 }]);
    const [version] = await (await b.client.DataSources.connect(a.id)).versions();
    const res = await b.api('POST', `/v1/data-sources/${other.id}/versions/${version!.id}/restore`);
    expect(res.status).toBe(404);
  });
});
