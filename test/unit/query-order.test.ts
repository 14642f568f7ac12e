import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/server/http/errors.js';
import { runQuery, sortEntries, compileOrder, validateQuery, type EntryRecord, type QueryBody } from '../../src/server/data-sources/query/index.js';

const noJoins = { load: async () => [] as EntryRecord[] };
const make = (id: number, data: Record<string, unknown>, order = 0, createdAt = '2024-01-01T00:00:00.000Z'): EntryRecord => ({
  id,
  dataSourceId: 7,
  data,
  order,
  createdAt,
  updatedAt: createdAt,
});
const entries = [
  make(1, { n: '10', s: 'b', grp: 'x' }, 0, '2024-01-03T00:00:00.000Z'),
  make(2, { n: 9, s: 'a', grp: 'y' }, 0, '2024-01-01T00:00:00.000Z'),
  make(3, { n: '100', s: 'C', grp: 'x' }, 1, '2024-01-02T00:00:00.000Z'),
  make(4, { s: 'a', grp: 'y' }, 0, '2024-01-04T00:00:00.000Z'),
  make(5, { n: null, s: 'abc', grp: 'x' }, 2, '2024-01-05T00:00:00.000Z'),
];

async function run(body: Partial<QueryBody>) {
  return runQuery(entries, { type: 'select', ...body } as QueryBody, noJoins);
}
const idsOf = async (body: Partial<QueryBody>) => (await run(body)).entries.map((e) => (e as EntryRecord).id);

async function refused(body: unknown): Promise<string> {
  const error = await runQuery(entries, body as QueryBody, noJoins).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpError);
  expect((error as HttpError).status).toBe(400);
  expect(() => validateQuery(body)).toThrow(HttpError);
  return (error as HttpError).message;
}

describe('order', () => {
  it('default order is order ASC then id DESC', async () => {
    expect(await idsOf({})).toEqual([4, 2, 1, 3, 5]);
  });
  it('numeric-looking values sort as numbers; null and missing last in ASC, first in DESC', async () => {
    expect(await idsOf({ order: [['data.n', 'ASC']] })).toEqual([2, 1, 3, 4, 5]);
    expect(await idsOf({ order: [['data.n', 'DESC']] })).toEqual([4, 5, 3, 1, 2]);
  });
  it('a bare column name is a data column; text sorts by code units', async () => {
    expect(await idsOf({ order: [['s', 'ASC']] })).toEqual([3, 4, 2, 5, 1]);
  });
  it('ties fall back to the default order (order ASC, id DESC); several keys apply in turn', async () => {
    expect(await idsOf({ order: [['data.grp', 'ASC']] })).toEqual([1, 3, 5, 4, 2]);
    expect(
      await idsOf({
        order: [
          ['data.grp', 'DESC'],
          ['data.s', 'DESC'],
        ],
      }),
    ).toEqual([4, 2, 1, 5, 3]);
  });
  it('entry fields: createdAt, id, order', async () => {
    expect(await idsOf({ order: [['createdAt', 'DESC']] })).toEqual([5, 4, 1, 3, 2]);
    expect(await idsOf({ order: [['id', 'ASC']] })).toEqual([1, 2, 3, 4, 5]);
    expect(await idsOf({ order: [['order', 'DESC']] })).toEqual([5, 3, 4, 2, 1]);
  });
  it('refuses any other direction and malformed pairs, naming the field', async () => {
    expect(await refused({ type: 'select', order: [['id', 'asc']] })).toBe('order[0][1] must be ASC or DESC');
    expect(
      await refused({
        type: 'select',
        order: [
          ['id', 'ASC'],
          ['s', 'UP'],
        ],
      }),
    ).toBe('order[1][1] must be ASC or DESC');
    expect(await refused({ type: 'select', order: ['id'] })).toMatch(/order\[0\] must be/);
    expect(await refused({ type: 'select', order: 'id' })).toMatch(/order must be an array/);
  });
  it('partial sort (offset + limit) gives exactly the slice of the full sort', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const many = Array.from({ length: 2000 }, (_, i) =>
      make(
        i + 1,
        { v: random() < 0.1 ? null : random() < 0.5 ? String(Math.floor(random() * 50)) : Math.floor(random() * 50), t: random() < 0.5 ? 'a' : 'b' },
        Math.floor(random() * 3),
      ),
    );
    const keys = compileOrder([
      ['data.v', 'DESC'],
      ['data.t', 'ASC'],
    ]);
    const full = sortEntries(many, keys).map((e) => e.id);
    for (const k of [1, 7, 50, 400]) expect(sortEntries(many, keys, k).map((e) => e.id)).toEqual(full.slice(0, k));
    // full sort is consistent with the comparator rules
    const values = sortEntries(many, keys).map((e) => e.data.v);
    const firstNumber = values.findIndex((v) => v !== null);
    expect(values.slice(0, firstNumber).every((v) => v === null)).toBe(true);
    const nums = values.slice(firstNumber).map(Number);
    expect(nums).toEqual([...nums].sort((a, b) => b - a));
  });
});

describe('limit, offset, pagination', () => {
  it('limit and offset select a page; limit 0 means none', async () => {
    expect(await idsOf({ limit: 2 })).toEqual([4, 2]);
    expect(await idsOf({ limit: 2, offset: 2 })).toEqual([1, 3]);
    expect(await idsOf({ offset: 3 })).toEqual([3, 5]);
    expect(await idsOf({ limit: 0 })).toEqual([4, 2, 1, 3, 5]);
    expect(await idsOf({ limit: 2, offset: 10 })).toEqual([]);
  });
  it('includePagination reports the total before limit and offset', async () => {
    const result = await run({ where: { grp: 'x' }, limit: 2, offset: 1, includePagination: true });
    expect(result.entries.map((e) => (e as EntryRecord).id)).toEqual([3, 5]);
    expect(result.pagination).toEqual({ total: 3, limit: 2, offset: 1 });
    expect((await run({ limit: 1 })).pagination).toBeUndefined();
  });
  it('refuses negative or non-integer limit and offset', async () => {
    expect(await refused({ type: 'select', limit: -1 })).toBe('limit must be a non-negative integer');
    expect(await refused({ type: 'select', limit: 1.5 })).toBe('limit must be a non-negative integer');
    expect(await refused({ type: 'select', offset: -3 })).toBe('offset must be a non-negative integer');
    expect(await refused({ type: 'select', includePagination: 'yes' })).toMatch(/includePagination/);
  });
});

describe('attributes', () => {
  it('keeps only the listed entry fields and data columns (data.<col> or bare)', async () => {
    const result = await run({ where: { s: 'b' }, attributes: ['id', 'data.s', 'grp', 'missing'] });
    expect(result.entries).toEqual([{ id: 1, data: { s: 'b', grp: 'x' } }]);
  });
  it('entry fields only, and the whole data', async () => {
    expect((await run({ where: { s: 'b' }, attributes: ['id', 'createdAt'] })).entries).toEqual([{ id: 1, createdAt: '2024-01-03T00:00:00.000Z' }]);
    expect((await run({ where: { s: 'b' }, attributes: ['data'] })).entries).toEqual([{ data: entries[0]!.data }]);
  });
  it('nested columns keep their nesting and never alter stored data', async () => {
    const nested = [make(1, { role: { name: 'Admin', level: 3 }, 'a.b': 1 })];
    const result = await runQuery(nested, { type: 'select', attributes: ['id', 'role.name', 'data.a.b'] }, noJoins);
    expect(result.entries).toEqual([{ id: 1, data: { role: { name: 'Admin' }, 'a.b': 1 } }]);
    expect(nested[0]!.data).toEqual({ role: { name: 'Admin', level: 3 }, 'a.b': 1 });
  });
  it('refuses a non-array or a non-string name', async () => {
    expect(await refused({ type: 'select', attributes: 'id' })).toMatch(/attributes must be an array/);
    expect(await refused({ type: 'select', attributes: ['id', 3] })).toBe('attributes[1] must be a column name');
  });
});
