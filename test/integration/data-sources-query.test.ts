import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSourceConnection } from '../../src/index.js';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

describe.each(ENTRY_CACHE_CASES)('data sources: query over HTTP (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  let people: DataSourceConnection;
  let peopleId: number;
  let ordersId: number;
  const q = (body: unknown, id = peopleId) => b.api('POST', `/v1/data-sources/${id}/data/query`, { json: body });
  const names = (res: { body: any }) => res.body.entries.map((e: any) => e.data.name);

  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries } });
    const ds = await b.client.DataSources.create({ name: 'People' });
    peopleId = ds.id;
    people = await b.client.DataSources.connect(ds.id);
    await people.import([
      { name: 'Ann', age: 30, city: 'Cork', score: '10', tags: ['a', 'b'], born: '1994-03-01', at: '2024-05-01 09:30', profile: { level: 2 } },
      { name: 'Bob', age: 25, city: 'oslo', score: '2', tags: ['b'], born: '1999-12-31', at: '2024-05-02 18:00', profile: { level: 1 } },
      { name: 'Cid', age: 41, city: '', score: '7', tags: [], born: '1983-07-15', at: '2024-06-01 12:00' },
      { name: 'Dee', age: '9', city: null, score: 'x', born: '2015-01-01', at: '2024-05-01 20:15' },
    ]);
    const orders = await b.client.DataSources.create({ name: 'Orders' });
    ordersId = orders.id;
    await (await b.client.DataSources.connect(orders.id)).import([
      { person: 'Ann', total: 5 },
      { person: 'Ann', total: 7 },
      { person: 'Bob', total: 1 },
    ]);
  });
  afterAll(() => b.close());

  it('filters with sift operators on the data (dotted paths, $iLike, $in, $elemMatch…)', async () => {
    expect(names(await q({ where: { age: { $gte: 30 } }, order: [['data.name', 'ASC']] }))).toEqual(['Ann', 'Cid']);
    expect(names(await q({ where: { 'profile.level': 2 } }))).toEqual(['Ann']);
    expect(names(await q({ where: { name: { $iLike: 'o' } } }))).toEqual(['Bob']);
    expect(names(await q({ where: { $or: [{ city: 'Cork' }, { tags: { $size: 0 } }] }, order: [['data.name', 'ASC']] }))).toEqual(['Ann', 'Cid']);
    expect(names(await q({ where: { tags: { $all: ['a', 'b'] } } }))).toEqual(['Ann']);
    expect(names(await q({ where: { name: { $regex: '^d', $options: 'i' } } }))).toEqual(['Dee']);
    const found = await people.find({ where: { city: { $in: ['Cork', 'oslo'] } }, order: [['data.name', 'DESC']] });
    expect(found.map((e) => e.data.name)).toEqual(['Bob', 'Ann']);
    expect((await people.findOne({ where: { name: 'Cid' } }))!.data.age).toBe(41);
    expect(await people.findOne({ where: { name: 'Nobody' } })).toBeNull();
  });

  it('reads data.<column> in where as the column, as order does, on the SQL and the JS path', async () => {
    const byName = [['data.name', 'ASC']];
    // Translated to SQL, and (with $regex) left to the JS evaluator: the same answers.
    expect(names(await q({ where: { 'data.name': 'Ann' } }))).toEqual(['Ann']);
    expect(names(await q({ where: { 'data.profile.level': 2 } }))).toEqual(['Ann']);
    expect(names(await q({ where: { 'data.name': { $regex: '^A' } } }))).toEqual(['Ann']);
    expect(names(await q({ where: { $or: [{ 'data.city': 'Cork' }, { 'data.age': { $lt: 26 } }] }, order: byName }))).toEqual(['Ann', 'Bob']);
    // $filters columns and a join's where read it the same way.
    expect(names(await q({ where: { $filters: [{ column: 'data.city', condition: '==', value: 'cork' }] } }))).toEqual(['Ann']);
    const joined = await q({
      where: { name: 'Ann' },
      join: { Orders: { dataSourceName: 'Orders', on: { 'data.name': 'data.person' }, where: { 'data.total': { $gt: 6 } } } },
    });
    expect(joined.body.entries[0].joins.Orders.map((o: { data: { total: number } }) => o.data.total)).toEqual([7]);
    // Bad input stays bad: a `$and` that is not a list is a 400 (never widened by the rewrite), and `data.$id` is
    // not the entry-field operator `$id`.
    const badAnd = await q({ type: 'delete', where: { name: 'Ann', 'data.name': 'Bob', $and: 5 } });
    expect([badAnd.status, badAnd.body.error.code]).toEqual([400, 'INVALID_QUERY']);
    expect(names(await q({ where: { 'data.$id': 1 } }))).toEqual([]);
    expect(names(await q({ order: byName }))).toEqual(['Ann', 'Bob', 'Cid', 'Dee']);
    // A bare and a prefixed name of the same column: both conditions hold.
    expect(names(await q({ where: { name: 'Ann', 'data.name': 'Bob' } }))).toEqual([]);
    expect(names(await q({ where: { age: { $gte: 25 }, 'data.age': { $lt: 31 } }, order: byName }))).toEqual(['Ann', 'Bob']);
    // A column named `data` itself: data.data.<key>.
    const nested = await b.client.DataSources.create({ name: `Nested-${entryCacheEntries}` });
    const conn = await b.client.DataSources.connect(nested.id);
    await conn.import([{ data: { k: 1 } }, { data: { k: 2 } }]);
    expect((await conn.find({ where: { 'data.data.k': 2 } })).map((e) => e.data)).toEqual([{ data: { k: 2 } }]);
    // Answered by the JS evaluator ($mod is not translated): rewritten once, not twice.
    expect((await conn.find({ where: { 'data.data.k': { $mod: [2, 0] } } })).map((e) => e.data)).toEqual([{ data: { k: 2 } }]);
    // Deletes and version data read it the same way.
    await conn.query({ type: 'delete', where: { 'data.data.k': 1 } });
    expect((await conn.find()).map((e) => e.data)).toEqual([{ data: { k: 2 } }]);
    const [version] = await conn.versions();
    expect((await conn.versionEntries(version!.id, { where: { 'data.data.k': 1 } })).map((e) => e.data)).toEqual([{ data: { k: 1 } }]);
  });

  it('refuses $where and other code-running or unknown operators (400) and runs no code', async () => {
    (globalThis as any).__pwned = false;
    for (const where of [
      { $where: 'globalThis.__pwned = true' },
      { name: { $function: 'x' } },
      { $expr: { $eq: ['$name', 'Ann'] } },
      { name: { $bogus: 1 } },
    ]) {
      const res = await q({ where });
      expect(res.status, JSON.stringify(where)).toBe(400);
    }
    expect((globalThis as any).__pwned).toBe(false);
    const longRegex = await q({ where: { name: { $regex: 'a'.repeat(5000) } } });
    expect(longRegex.status).toBe(400);
  });

  describe('$filters conditions', () => {
    const cases: [string, object, string[]][] = [
      ['==', { column: 'city', condition: '==', value: 'CORK' }, ['Ann']],
      ['!=', { column: 'city', condition: '!=', value: 'cork' }, ['Bob', 'Cid', 'Dee']],
      ['>', { column: 'age', condition: '>', value: 25 }, ['Ann', 'Cid']],
      ['>=', { column: 'age', condition: '>=', value: '25' }, ['Ann', 'Bob', 'Cid']],
      ['<', { column: 'score', condition: '<', value: 7 }, ['Bob']],
      ['<=', { column: 'score', condition: '<=', value: 7 }, ['Bob', 'Cid']],
      ['contains', { column: 'name', condition: 'contains', value: 'O' }, ['Bob']],
      ['notcontains', { column: 'name', condition: 'notcontains', value: 'n' }, ['Bob', 'Cid', 'Dee']],
      ['empty', { column: 'city', condition: 'empty' }, ['Cid', 'Dee']],
      ['notempty', { column: 'tags', condition: 'notempty' }, ['Ann', 'Bob']],
      ['between', { column: 'age', condition: 'between', value: { from: 25, to: 30 } }, ['Ann', 'Bob']],
      ['oneof (array)', { column: 'name', condition: 'oneof', value: ['ann', 'Dee'] }, ['Ann', 'Dee']],
      ['oneof (string)', { column: 'name', condition: 'oneof', value: 'Bob, Cid' }, ['Bob', 'Cid']],
      ['dateis', { column: 'born', condition: 'dateis', value: '1999-12-31' }, ['Bob']],
      ['dateis unit', { column: 'at', condition: 'dateis', value: '2024-05-15', unit: 'month' }, ['Ann', 'Bob', 'Dee']],
      ['datebefore', { column: 'born', condition: 'datebefore', value: '1990-01-01' }, ['Cid']],
      ['dateafter', { column: 'born', condition: 'dateafter', value: '1999-12-31' }, ['Dee']],
      ['dateafter time of day', { column: 'at', condition: 'dateafter', value: '17:00' }, ['Bob', 'Dee']],
      ['datebefore date time', { column: 'at', condition: 'datebefore', value: '2024-05-01 10:00' }, ['Ann']],
      ['datebetween', { column: 'at', condition: 'datebetween', from: { value: '2024-05-01' }, to: { value: '2024-05-02' } }, ['Ann', 'Bob', 'Dee']],
    ];
    for (const [label, filter, expected] of cases)
      it(label, async () => {
        const res = await q({ where: { $filters: [filter] }, order: [['data.name', 'ASC']] });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(names(res)).toEqual(expected);
      });

    it('ANDs several filters and combines them with sift keys; unknown condition → 400', async () => {
      const res = await q({
        where: {
          city: { $ne: null },
          $filters: [
            { column: 'age', condition: '>', value: 20 },
            { column: 'name', condition: 'contains', value: 'b' },
          ],
        },
      });
      expect(names(res)).toEqual(['Bob']);
      const bad = await q({ where: { $filters: [{ column: 'age', condition: 'almost', value: 1 }] } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toContain('condition');
    });
  });

  it('orders (numeric strings as numbers, default order), limits, offsets and paginates', async () => {
    // '10' > '7' > '2' as numbers (as text '7' would come first)
    expect(names(await q({ order: [['data.score', 'DESC']] })).filter((n: string) => n !== 'Dee')).toEqual(['Ann', 'Cid', 'Bob']);
    expect(names(await q({ order: [['data.score', 'ASC']] })).filter((n: string) => n !== 'Dee')).toEqual(['Bob', 'Cid', 'Ann']);
    const page = await q({ order: [['data.age', 'ASC']], limit: 2, offset: 1, includePagination: true });
    expect(names(page)).toEqual(['Bob', 'Ann']);
    expect(page.body.pagination).toEqual({ total: 4, limit: 2, offset: 1 });
    // default: order ASC (import position), then id DESC
    expect(names(await q({}))).toEqual(['Ann', 'Bob', 'Cid', 'Dee']);
    const newest = await people.insert({ name: 'Eve', age: 1 });
    expect(names(await q({ limit: 1 }))).toEqual(['Eve']); // order 0, newest id first
    await people.removeById(newest.id);
    for (const bad of [{ limit: -1 }, { offset: -2 }, { order: [['data.age', 'UP']] }, { includePagination: 'yes' }]) {
      const res = await q(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
  });

  it('returns only the requested attributes', async () => {
    const res = await q({ where: { name: 'Ann' }, attributes: ['id', 'data.name', 'age'] });
    expect(res.body.entries).toHaveLength(1);
    expect(Object.keys(res.body.entries[0]).sort()).toEqual(['data', 'id']);
    expect(res.body.entries[0].data).toEqual({ name: 'Ann', age: 30 });
  });

  it('aggregates with $group, $sort, $project and $convertToNumber', async () => {
    const res = await q({
      aggregate: [
        { $project: { city: '$data.city', score: { $convertToNumber: '$data.score' } } },
        { $group: { _id: null, total: { $sum: '$score' }, max: { $max: '$score' }, min: { $min: '$score' }, avg: { $avg: '$score' } } },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.entries).toEqual([{ _id: null, total: 19, max: 10, min: 2, avg: 19 / 3 }]);
    const sortedGroups = await q({
      aggregate: [{ $group: { _id: '$data.city', n: { $sum: 1 } } }, { $sort: { n: -1, _id: 1 } }],
    });
    expect(sortedGroups.body.entries).toHaveLength(4);
    expect(sortedGroups.body.entries).toEqual(
      expect.arrayContaining([
        { _id: 'Cork', n: 1 },
        { _id: '', n: 1 },
        { _id: null, n: 1 },
      ]),
    );
  });

  describe('joins', () => {
    it('attaches matching entries (with limit and order per parent)', async () => {
      const res = await q({
        where: { name: { $in: ['Ann', 'Bob', 'Cid'] } },
        order: [['data.name', 'ASC']],
        join: { Orders: { dataSourceName: 'Orders', on: { 'data.name': 'data.person' }, order: ['data.total', 'DESC'], limit: 1 } },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const [ann, bob, cid] = res.body.entries;
      expect(ann.joins.Orders.map((o: any) => o.data.total)).toEqual([7]);
      expect(ann.joins.Orders[0]).toMatchObject({ dataSourceId: ordersId });
      expect(bob.joins.Orders.map((o: any) => o.data.total)).toEqual([1]);
      expect(cid.joins.Orders).toEqual([]);
    });

    it('has, count, sum and required', async () => {
      const on = { 'data.name': 'data.person' };
      const res = await q({
        order: [['data.name', 'ASC']],
        join: {
          Has: { dataSourceId: ordersId, on, has: true },
          Count: { dataSourceId: ordersId, on, count: true },
          Sum: { dataSourceId: ordersId, on, sum: 'total' },
        },
      });
      expect(res.body.entries.map((e: any) => [e.data.name, e.joins.Has, e.joins.Count, e.joins.Sum])).toEqual([
        ['Ann', true, 2, 12],
        ['Bob', true, 1, 1],
        ['Cid', false, 0, 0],
        ['Dee', false, 0, 0],
      ]);
      const required = await q({ order: [['data.name', 'ASC']], join: { O: { dataSourceId: ordersId, on, required: true } } });
      expect(names(required)).toEqual(['Ann', 'Bob']);
    });

    it('without on appends the other data source’s entries', async () => {
      const res = await q({ where: { name: 'Ann' }, join: { All: { dataSourceId: ordersId, where: { total: { $gt: 1 } } } } });
      expect(res.body.entries).toHaveLength(3);
      expect(
        res.body.entries
          .filter((e: any) => e.dataSourceId === ordersId)
          .map((e: any) => e.data.total)
          .sort(),
      ).toEqual([5, 7]);
    });

    it('refuses a join to an unknown data source (404) or one the token cannot read (403)', async () => {
      const missing = await q({ join: { X: { dataSourceId: 99999, on: { 'data.name': 'data.person' } } } });
      expect(missing.status).toBe(404);
      const secret = await b.studio.DataSources.create({ name: 'Secret', organizationId: b.server.bootstrap.organizationId });
      await b.studio.DataSources.update(secret.id, { accessRules: [{ type: ['insert'], allow: 'all' }] });
      const denied = await q({ join: { S: { dataSourceId: secret.id, on: { 'data.name': 'data.person' } } } });
      expect(denied.status).toBe(403);
      expect(denied.body.error.code).toBe('datasource.access');
    });
  });

  it('type: delete removes every match and returns deletedCount', async () => {
    const ds = await b.client.DataSources.create({ name: 'Deletable' });
    const conn = await b.client.DataSources.connect(ds.id);
    await conn.import([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    const res = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { json: { type: 'delete', where: { n: { $gte: 3 } } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deletedCount: 2 });
    expect((await conn.find({ order: [['data.n', 'ASC']] })).map((e) => e.data.n)).toEqual([1, 2]);
    expect(await conn.query({ type: 'delete', where: { n: 99 } })).toEqual({ deletedCount: 0 });
    const bad = await b.api('POST', `/v1/data-sources/${ds.id}/data/query`, { json: { type: 'drop' } });
    expect(bad.status).toBe(400);
    expect((await conn.find()).length).toBe(2);
  });
});
