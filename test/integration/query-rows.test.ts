import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 14, "memory bounded by configuration, not by data": a select holds at most `limits.queryRows` entries in its
 * answer, and an aggregate the JS evaluator runs takes in at most that many; past it 422 QUERY_TOO_LARGE, whichever
 * path answers (the database; the JS evaluator over the entry cache; a scan in pages when the cache is off). Before,
 * `POST …/data/query {}` answered every entry of any data source as one JSON body. Here the cap is 50 over 60 entries.
 */
describe.each(ENTRY_CACHE_CASES)('limits.queryRows (entry cache $cache)', ({ entryCacheEntries }) => {
  const CAP = 50;
  let b: TestBackend;
  let ds: number;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries, queryRows: CAP } });
    ds = (await b.api('POST', `/v1/data-sources?appId=${b.server.bootstrap.appId}`, { json: { name: 'Rows' } })).body.dataSource.id;
    const entries = Array.from({ length: 60 }, (_, i) => ({ n: i, name: `n${i}`, even: i % 2 === 0 }));
    expect((await b.api('POST', `/v1/data-sources/${ds}/data`, { json: { append: true, entries } })).status).toBe(200);
  });
  afterAll(() => b?.close());

  const query = (body: unknown) => b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: body });
  const expectTooLarge = (r: { status: number; body: any }, what: string) => {
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'QUERY_TOO_LARGE', limit: CAP });
    expect(r.body.error.message).toMatch(new RegExp(`^${what}: more than ${CAP} entries match \\(limits\\.queryRows\\)`));
  };
  // Translated (the database), and left to the JS evaluator (`$regex`): the same answers.
  const wheres = { sql: { n: { $gte: 0 } }, js: { name: { $regex: '^n' } } };

  for (const [path, where] of Object.entries(wheres)) {
    it(`a select past the cap is 422; within it, or paged, it answers (${path})`, async () => {
      expectTooLarge(await query({ where }), 'select');
      expectTooLarge(await query({ where, limit: CAP + 1 }), 'select');
      expectTooLarge(await query({ where, includePagination: true }), 'select');
      const page = await query({ where, limit: CAP, offset: 5, includePagination: true, order: [['data.n', 'ASC']] });
      expect(page.status).toBe(200);
      expect(page.body.entries.map((e: any) => e.data.n)).toEqual(Array.from({ length: CAP }, (_, i) => i + 5));
      expect(page.body.pagination).toEqual({ total: 60, limit: CAP, offset: 5 });
      // No limit, but the answer holds 40 after the offset, or 30 matches: within the cap.
      const tail = await query({ where, offset: 20, order: [['data.n', 'ASC']] });
      expect(tail.status).toBe(200);
      expect(tail.body.entries).toHaveLength(40);
      // Distinct rows count, not the matches they come from.
      expectTooLarge(await query({ where, distinct: true, attributes: ['data.n'] }), 'select');
      const two = await query({ where, distinct: true, attributes: ['data.even'], includePagination: true });
      expect(two.status).toBe(200);
      expect(two.body.pagination.total).toBe(2);
      const evens = await query({ where: { $and: [where, { even: true }] }, limit: 1000 });
      expect(evens.status).toBe(200);
      expect(evens.body.entries).toHaveLength(30);
    });
  }

  it('an aggregate the JS evaluator runs takes in at most the cap; one the database groups is not bounded by it', async () => {
    const project = [{ $project: { _id: 0, n: '$data.n' } }];
    expectTooLarge(await query({ aggregate: project }), 'aggregate');
    const narrowed = await query({ where: { even: true }, aggregate: project });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.entries).toHaveLength(30);
    // The body's where chooses the input; a leading `$match` does not narrow it (the 422 says so).
    const wide = await query({ aggregate: [{ $match: { 'data.even': true } }, ...project] });
    expectTooLarge(wide, 'aggregate');
    expect(wide.body.error.message).toMatch(/narrow the body's where/);
    const sorted = await query({ where: { even: true }, aggregate: [...project, { $sort: { n: -1 } }, { $limit: 3 }] });
    expect(sorted.body.entries).toEqual([{ n: 58 }, { n: 56 }, { n: 54 }]);
    // `$group` over every entry: the database reads them, the answer is one group.
    const grouped = await query({ aggregate: [{ $group: { _id: null, count: { $sum: 1 } } }] });
    expect(grouped.status).toBe(200);
    expect(grouped.body.entries).toEqual([{ _id: null, count: 60 }]);
  });

  it('GET …/data lists every entry (streamed); with only an offset it is a select, under the cap', async () => {
    const all = await b.api('GET', `/v1/data-sources/${ds}/data`);
    expect(all.status).toBe(200);
    expect(all.body.entries).toHaveLength(60);
    expectTooLarge(await b.api('GET', `/v1/data-sources/${ds}/data?offset=0`), 'select');
    const rest = await b.api('GET', `/v1/data-sources/${ds}/data?offset=15`);
    expect(rest.status).toBe(200);
    expect(rest.body.entries).toHaveLength(45);
  });

  it('a client gets a typed error with the code', async () => {
    const conn = await b.client.DataSources.connect(ds);
    await expect(conn.find()).rejects.toMatchObject({ code: 'QUERY_TOO_LARGE' });
    expect(await conn.find({ limit: 10 })).toHaveLength(10);
  });
});
