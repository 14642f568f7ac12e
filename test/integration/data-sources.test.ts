import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isApiError, isClientError, type DataSource } from '../../src/index.js';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

/** Rejection of a promise, for asserting typed errors. */
async function failure(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe.each(ENTRY_CACHE_CASES)('data sources: CRUD, entries, import, indexes (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  let appId: number;
  let organizationId: number;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries } });
    ({ appId, organizationId } = b.server.bootstrap);
  });
  afterAll(() => b.close());

  it('creates a data source with the documented defaults (201) and lists it for the app', async () => {
    const res = await b.api('POST', `/v1/data-sources?appId=${appId}`, { json: { name: 'Defaults' } });
    expect(res.status).toBe(201);
    expect(res.body.dataSource).toMatchObject({
      name: 'Defaults',
      public: false,
      encrypted: false,
      hooks: [],
      columns: null,
      type: null,
      appId,
      organizationId,
    });
    expect(res.body.dataSource.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const list = await b.client.DataSources.get();
    expect(list.map((d) => d.name)).toContain('Defaults');
    const byOrg = await b.studio.DataSources.get({ organizationId });
    expect(byOrg.map((d) => d.name)).toContain('Defaults');
  });

  it('requires exactly one of appId and organizationId to create, and at most one to list (400)', async () => {
    const both = await b.api('GET', `/v1/data-sources?appId=${appId}&organizationId=${organizationId}`);
    expect(both.status).toBe(400);
    expect(both.body.error.message).toContain('appId');
    const create = await b.api('POST', '/v1/data-sources', { json: { name: 'x' } });
    expect(create.status).toBe(400);
    const other = await b.api('GET', '/v1/data-sources?organizationId=999');
    expect(other.status).toBe(404);
  });

  it('refuses a missing name (400) and a taken name (409), and a bad type (400)', async () => {
    const missing = await b.api('POST', `/v1/data-sources?appId=${appId}`, { json: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain('"name"');
    await b.client.DataSources.create({ name: 'Taken' });
    const taken = await failure(b.client.DataSources.create({ name: 'Taken' }));
    expect(isApiError(taken) && taken.status).toBe(409);
    expect(taken.code).toBe('NAME_TAKEN');
    const badType = await b.api('POST', `/v1/data-sources?appId=${appId}`, { json: { name: 'T2', type: 5 } });
    expect(badType.status).toBe(400);
    expect(badType.body.error.message).toContain('"type"');
  });

  it('gets a data source by id, by URL-encoded name and by all-digit name with dsn', async () => {
    const a = await b.client.DataSources.create({ name: 'Team / Members', type: 'bookmarks' });
    const digits = await b.client.DataSources.create({ name: '2024' });
    expect(a.type).toBe('bookmarks');
    expect((await b.client.DataSources.getById(a.id)).name).toBe('Team / Members');
    expect((await b.client.DataSources.getById('Team / Members')).id).toBe(a.id);
    const raw = await b.api('GET', `/v1/data-sources/${encodeURIComponent('Team / Members')}`);
    expect(raw.body.dataSource.id).toBe(a.id);
    const byDsn = await b.api('GET', '/v1/data-sources/2024?dsn');
    expect(byDsn.status).toBe(200);
    expect(byDsn.body.dataSource.id).toBe(digits.id);
    expect((await b.client.DataSources.getById('2024')).id).toBe(digits.id);
    const missing = await b.api('GET', '/v1/data-sources/987654');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('DATA_SOURCE_NOT_FOUND');
    // type filter of the client
    expect((await b.client.DataSources.get({ type: 'bookmarks' })).map((d) => d.id)).toEqual([a.id]);
  });

  it('updates name, columns, definition and hooks; refuses unknown fields, taken names and bad values', async () => {
    const ds = await b.client.DataSources.create({ name: 'Updatable' });
    const updated = await b.client.DataSources.update(ds.id, { name: 'Renamed', columns: ['a', 'b'], definition: { x: 1 } });
    expect(updated).toMatchObject({ id: ds.id, name: 'Renamed', columns: ['a', 'b'], definition: { x: 1 } });
    expect((await b.client.DataSources.getById(ds.id)).columns).toEqual(['a', 'b']);
    await b.client.DataSources.create({ name: 'Other' });
    const taken = await b.api('PUT', `/v1/data-sources/${ds.id}`, { json: { name: 'Other' } });
    expect(taken.status).toBe(409);
    for (const [json, field] of [
      [{ columns: 'a' }, 'columns'],
      [{ nope: 1 }, 'nope'],
      [{ hooks: [{ type: 'mail', runOn: ['insert'], payload: {} }] }, 'hooks[0].type'],
      [{ hooks: [{ type: 'web', runOn: ['insert'], payload: { url: 'ftp://x' } }] }, 'hooks[0].payload.url'],
      [{ hooks: [{ type: 'operations', runOn: ['insert'], conditions: [{ $where: 'true' }], payload: {} }] }, 'hooks[0].conditions[0]'],
    ] as const) {
      const res = await b.api('PUT', `/v1/data-sources/${ds.id}`, { token: b.server.bootstrap.studioToken, json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.message).toContain(field);
    }
    // nothing changed by the refused updates
    expect((await b.client.DataSources.getById(ds.id)).hooks).toEqual([]);
  });

  it('deletes a data source with its entries (200, no body); later reads are 404', async () => {
    const ds = await b.client.DataSources.create({ name: 'Doomed' });
    const conn = await b.client.DataSources.connect(ds.id);
    const entry = await conn.insert({ a: 1 });
    const res = await b.api('DELETE', `/v1/data-sources/${ds.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toBeUndefined();
    expect((await b.api('GET', `/v1/data-sources/${ds.id}`)).status).toBe(404);
    expect((await b.api('GET', `/v1/data-sources/${ds.id}/data/${entry.id}`)).status).toBe(404);
    // The name is free again.
    expect((await b.client.DataSources.create({ name: 'Doomed' })).id).not.toBe(ds.id);
  });

  describe('entries', () => {
    let ds: DataSource;
    beforeAll(async () => {
      ds = await b.client.DataSources.create({ name: 'Entries' });
    });

    it('inserts (201), reads, merges updates (null is a value) and deletes ({} then 404)', async () => {
      const conn = await b.client.DataSources.connect(ds.id);
      const entry = await conn.insert({ name: 'Ann', age: 30, tags: ['a'], nested: { x: 1 } });
      expect(entry).toMatchObject({ dataSourceId: ds.id, data: { name: 'Ann', age: 30, tags: ['a'], nested: { x: 1 } }, deletedAt: null });
      const raw = await b.api('GET', `/v1/data-sources/${ds.id}/data/${entry.id}`);
      expect(raw.status).toBe(200);
      expect(raw.body.data).toEqual(entry.data);
      const put = await b.api('PUT', `/v1/data-sources/${ds.id}/data/${entry.id}`, { json: { age: null, city: 'Cork' } });
      expect(put.status).toBe(201);
      expect(put.body.data).toEqual({ name: 'Ann', age: null, tags: ['a'], nested: { x: 1 }, city: 'Cork' });
      expect((await conn.findById(entry.id))!.data).toEqual(put.body.data);
      const del = await b.api('DELETE', `/v1/data-sources/${ds.id}/data/${entry.id}`);
      expect(del.status).toBe(200);
      expect(del.body).toEqual({});
      const gone = await b.api('GET', `/v1/data-sources/${ds.id}/data/${entry.id}`);
      expect(gone.status).toBe(404);
      expect(gone.body.error.code).toBe('ENTRY_NOT_FOUND');
      expect(await conn.findById(entry.id)).toBeNull();
      expect((await b.api('DELETE', `/v1/data-sources/${ds.id}/data/${entry.id}`)).status).toBe(404);
      expect((await b.api('PUT', `/v1/data-sources/${ds.id}/data/${entry.id}`, { json: { a: 1 } })).status).toBe(404);
    });

    it('refuses bodies that are not objects (400) and keeps the data intact', async () => {
      const conn = await b.client.DataSources.connect(ds.id);
      const entry = await conn.insert({ keep: true });
      for (const body of ['[1,2]', '"text"', '{"a":']) {
        const res = await b.api('PUT', `/v1/data-sources/${ds.id}/data`, { body, headers: { 'Content-Type': 'application/json' } });
        expect(res.status).toBe(400);
        const upd = await b.api('PUT', `/v1/data-sources/${ds.id}/data/${entry.id}`, { body, headers: { 'Content-Type': 'application/json' } });
        expect(upd.status).toBe(400);
      }
      expect((await b.api('GET', `/v1/data-sources/${ds.id}/data/abc`)).status).toBe(400);
      expect((await conn.findById(entry.id))!.data).toEqual({ keep: true });
      // the client refuses bad arguments before sending
      expect(isClientError(await failure(conn.insert([] as never)))).toBe(true);
      expect(isClientError(await failure(conn.findById(-1)))).toBe(true);
      expect(isClientError(await failure(b.client.DataSources.connect('')))).toBe(true);
    });

    it('answers indexes: distinct values per column, nested columns with dots', async () => {
      const other = await b.client.DataSources.create({ name: 'Indexed' });
      const conn = await b.client.DataSources.connect('Indexed');
      await conn.import([
        { Role: { Name: 'Admin' }, city: 'Cork', tags: ['x', 'y'] },
        { Role: { Name: 'User' }, city: 'Cork', tags: ['y'] },
        { Role: { Name: 'Admin' }, city: 'Oslo' },
        { city: null },
      ]);
      const res = await b.api('GET', `/v1/data-sources/${other.id}/indexes/Role.Name,city`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ indexes: { 'Role.Name': ['Admin', 'User'], city: ['Cork', 'Oslo', null] } });
      expect(await conn.getIndex('tags')).toEqual(['x', 'y']);
      expect(await conn.getIndexes(['city', 'missing'])).toEqual({ city: ['Cork', 'Oslo', null], missing: [] });
    });
  });

  describe('bulk import and truncate', () => {
    it('replaces by default, appends with append (body or query), truncates with []', async () => {
      const ds = await b.client.DataSources.create({ name: 'Imported' });
      const conn = await b.client.DataSources.connect(ds.id);
      await conn.insert({ old: true });
      const res = await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { entries: [{ n: 1 }, { n: 2 }] } });
      expect(res.status).toBe(200);
      expect(res.body).toBeUndefined();
      expect((await conn.find()).map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]);
      await b.api('POST', `/v1/data-sources/${ds.id}/data?append=true`, { json: { entries: [{ n: 3 }] } });
      await conn.import([{ n: 4 }], { append: true });
      expect((await conn.find({ order: [['data.n', 'ASC']] })).map((e) => e.data.n)).toEqual([1, 2, 3, 4]);
      const truncate = await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { entries: [] } });
      expect(truncate.status).toBe(200);
      expect(await conn.find()).toEqual([]);
    });

    it('refuses a non-array or non-object entries (400) without changing anything', async () => {
      const ds = await b.client.DataSources.create({ name: 'ImportGuard' });
      const conn = await b.client.DataSources.connect(ds.id);
      await conn.import([{ a: 1 }]);
      for (const json of [{}, { entries: 'x' }, { entries: [{ a: 2 }, 5] }, { entries: [], append: 'yes' }]) {
        const res = await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json });
        expect(res.status, JSON.stringify(json)).toBe(400);
      }
      expect((await conn.find()).map((e) => e.data)).toEqual([{ a: 1 }]);
    });
  });
});
