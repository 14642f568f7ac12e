import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** `distinct: true` of a select (issue 16, item 8): rows equal to an earlier row are left out. */
describe('distinct in a query', () => {
  let b: TestBackend;
  let path: string;
  beforeAll(async () => {
    b = await startTestBackend();
    const ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Offices' } })).body.dataSource;
    path = `/v1/data-sources/${ds.id}/data/query`;
    const rows = [
      { city: 'Dublin', country: 'IE', n: 1 },
      { city: 'London', country: 'UK', n: 2 },
      { city: 'Dublin', country: 'IE', n: 3 },
      { country: 'IE', city: 'Cork', n: 4 },
      { city: 'London', country: 'UK', n: 5 },
      { city: 'Paris', country: 'FR', n: 6, tags: { a: 1, b: 2 } },
      { city: 'Paris', country: 'FR', n: 7, tags: { b: 2, a: 1 } },
    ];
    await b.api('POST', `/v1/data-sources/${ds.id}/data`, { json: { entries: rows } });
  });
  afterAll(() => b?.close());

  const query = async (json: Record<string, unknown>) => {
    const res = await b.api('POST', path, { json });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  it('leaves out rows equal to an earlier one, after attributes, in the query order', async () => {
    const plain = await query({ attributes: ['data.city'], order: [['data.n', 'ASC']] });
    expect(plain.entries).toHaveLength(7);
    const { entries } = await query({ attributes: ['data.city', 'data.country'], order: [['data.n', 'ASC']], distinct: true });
    expect(entries).toEqual([
      { data: { city: 'Dublin', country: 'IE' } },
      { data: { city: 'London', country: 'UK' } },
      { data: { country: 'IE', city: 'Cork' } },
      { data: { city: 'Paris', country: 'FR' } },
    ]);
    const desc = await query({ attributes: ['country'], order: [['data.n', 'DESC']], distinct: true });
    expect(desc.entries.map((e: { data: { country: string } }) => e.data.country)).toEqual(['FR', 'UK', 'IE']);
  });

  it('compares objects by value whatever their key order; with where, limit, offset and pagination over distinct rows', async () => {
    const tags = await query({ attributes: ['tags'], where: { city: 'Paris' }, distinct: true });
    expect(tags.entries).toEqual([{ data: { tags: { a: 1, b: 2 } } }]);
    const paged = await query({ attributes: ['city'], order: [['data.n', 'ASC']], distinct: true, limit: 2, offset: 1, includePagination: true });
    expect(paged.entries.map((e: { data: { city: string } }) => e.data.city)).toEqual(['London', 'Cork']);
    expect(paged.pagination).toEqual({ total: 4, limit: 2, offset: 1 });
    // Whole entries always differ (their ids): distinct changes nothing.
    expect((await query({ distinct: true })).entries).toHaveLength(7);
    expect((await query({ distinct: false, attributes: ['city'] })).entries).toHaveLength(7);
  });

  it('refuses a distinct that is not a boolean, or with aggregate or delete (400)', async () => {
    for (const json of [{ distinct: 'yes' }, { distinct: true, aggregate: [{ $group: { _id: '$data.city' } }] }, { type: 'delete', distinct: true }]) {
      const res = await b.api('POST', path, { json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_QUERY');
    }
  });

  it('works through the client library (find and query)', async () => {
    const connection = await b.client.DataSources.connect('Offices');
    const found = await connection.find({ attributes: ['country'], order: [['data.n', 'ASC']], distinct: true });
    expect(found.map((e) => e.data.country)).toEqual(['IE', 'UK', 'FR']);
    const { entries } = await connection.query({ attributes: ['city'], where: { country: 'UK' }, distinct: true });
    expect(entries).toEqual([{ data: { city: 'London' } }]);
  });
});
