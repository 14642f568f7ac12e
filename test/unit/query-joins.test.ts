import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/server/http/errors.js';
import { runQuery, type EntryRecord, type JoinRef, type QueryBody } from '../../src/server/data-sources/query/index.js';

const make = (dataSourceId: number, id: number, data: Record<string, unknown>, order = 0): EntryRecord => ({
  id,
  dataSourceId,
  data,
  order,
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-01-01T00:00:00.000Z',
});

const users = [
  make(1, 1, { name: 'Ann', userId: 1, teamIds: [10, 11] }),
  make(1, 2, { name: 'Ben', userId: '2', teamIds: [] }),
  make(1, 3, { name: 'Cid', userId: 3, teamIds: [11] }),
];
const orders = [
  make(2, 101, { user: 1, total: '20', status: 'paid' }),
  make(2, 102, { user: '1', total: 5, status: 'open' }),
  make(2, 103, { user: 3, total: 'x', status: 'paid' }),
  make(2, 104, { user: 1, total: 7.5, status: 'paid' }),
  make(2, 105, { user: 9, total: 1, status: 'paid' }),
];
const teams = [make(3, 201, { teamId: 10, label: 'Red' }), make(3, 202, { teamId: 11, label: 'Blue' })];

function loader() {
  const calls: JoinRef[] = [];
  return {
    calls,
    async load(ref: JoinRef) {
      calls.push(ref);
      if (ref.dataSourceId === 2 || ref.dataSourceName === 'Orders') return orders;
      if (ref.dataSourceId === 3) return teams;
      throw new HttpError(404, 'NOT_FOUND', 'Data source not found');
    },
  };
}

async function query(body: Partial<QueryBody>) {
  const joins = loader();
  const result = await runQuery(users, { type: 'select', order: [['id', 'ASC']], ...body } as QueryBody, joins);
  return { result, calls: joins.calls, rows: result.entries as (EntryRecord & { joins: Record<string, unknown> })[] };
}

describe('join', () => {
  it('attaches matching entries as { id, dataSourceId, data }; numeric keys match across number and string', async () => {
    const { rows, calls } = await query({ join: { Orders: { dataSourceId: 2, on: { 'data.userId': 'data.user' } } } });
    expect(calls).toEqual([{ dataSourceId: 2 }]);
    // joined entries come in the default order (order ASC, id DESC) unless the join has its own order
    expect(rows.map((r) => (r.joins.Orders as EntryRecord[]).map((o) => o.id))).toEqual([[104, 102, 101], [], [103]]);
    expect((rows[2]!.joins.Orders as unknown[])[0]).toEqual({ id: 103, dataSourceId: 2, data: orders[2]!.data });
    expect(users[0]).not.toHaveProperty('joins');
  });
  it('has, count and sum (numeric values only)', async () => {
    const { rows } = await query({
      join: {
        HasOrders: { dataSourceName: 'Orders', on: { userId: 'user' }, has: true },
        Count: { dataSourceId: 2, on: { userId: 'user' }, count: true },
        Spent: { dataSourceId: 2, on: { userId: 'user' }, sum: 'total' },
      },
    });
    expect(rows.map((r) => r.joins)).toEqual([
      { HasOrders: true, Count: 3, Spent: 32.5 },
      { HasOrders: false, Count: 0, Spent: 0 },
      { HasOrders: true, Count: 1, Spent: 0 },
    ]);
  });
  it('required drops parents without matches (before pagination); where filters the joined entries', async () => {
    const { result, rows } = await query({
      join: { Paid: { dataSourceId: 2, on: { userId: 'user' }, required: true, where: { status: 'paid' }, count: true } },
      includePagination: true,
    });
    expect(rows.map((r) => [r.id, r.joins.Paid])).toEqual([
      [1, 2],
      [3, 1],
    ]);
    expect(result.pagination).toEqual({ total: 2, limit: 0, offset: 0 });
  });
  it('per-parent limit and order, and attributes of the joined data', async () => {
    const { rows } = await query({
      where: { name: 'Ann' },
      join: { Top: { dataSourceId: 2, on: { userId: 'user' }, order: ['data.total', 'DESC'], limit: 2, attributes: ['total'] } },
    });
    expect(rows[0]!.joins.Top).toEqual([
      { id: 101, dataSourceId: 2, data: { total: '20' } },
      { id: 104, dataSourceId: 2, data: { total: 7.5 } },
    ]);
  });
  it('an array value on the parent side matches each element', async () => {
    const { rows } = await query({ join: { Teams: { dataSourceId: 3, on: { teamIds: 'teamId' }, attributes: ['label'], order: ['label', 'DESC'] } } });
    expect(rows.map((r) => (r.joins.Teams as { data: { label: string } }[]).map((t) => t.data.label))).toEqual([['Red', 'Blue'], [], ['Blue']]);
  });
  it('a join on an entry field (id)', async () => {
    const { rows } = await query({ join: { ById: { dataSourceId: 2, on: { id: 'data.user' }, count: true } } });
    expect(rows.map((r) => r.joins.ById)).toEqual([3, 0, 1]);
  });
  it('without on, the other entries matching its where are appended to the result', async () => {
    const { result } = await query({
      where: { name: 'Ben' },
      join: { Extra: { dataSourceId: 2, where: { status: 'open' } } },
      includePagination: true,
    });
    expect(result.entries.map((e) => [(e as EntryRecord).dataSourceId, (e as EntryRecord).id])).toEqual([
      [1, 2],
      [2, 102],
    ]);
    expect(result.pagination!.total).toBe(2);
  });
  it('refuses malformed joins with 400, naming the field; loader errors pass through', async () => {
    const refused = async (join: unknown) => {
      const error = await runQuery(users, { type: 'select', join } as QueryBody, loader()).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(HttpError);
      return `${(error as HttpError).status} ${(error as HttpError).message}`;
    };
    expect(await refused({ X: { on: { a: 'b' } } })).toBe('400 join.X needs dataSourceId or dataSourceName');
    expect(await refused({ X: { dataSourceId: 2, on: {} } })).toMatch(/^400 join\.X\.on must be an object/);
    expect(await refused({ X: { dataSourceId: 2, on: { a: 'b' }, has: true, count: true } })).toMatch(/only one of has, count and sum/);
    expect(await refused({ X: { dataSourceId: 2, on: { a: 'b' }, limit: -1 } })).toMatch(/join\.X\.limit/);
    expect(await refused({ X: { dataSourceId: 2, on: { a: 'b' }, order: ['a', 'down'] } })).toBe('400 join.X.order[1] must be ASC or DESC');
    expect(await refused({ X: { dataSourceId: 2, on: { a: 'b' }, where: { $where: 'true' } } })).toMatch(
      /join\.X\.where\.\$where: operator \$where is not allowed/,
    );
    expect(await refused({ X: { dataSourceId: 2, count: true } })).toMatch(/need on/);
    expect(await refused({ X: { dataSourceId: 99, on: { a: 'b' } } })).toBe('404 Data source not found');
  });
  it('indexes the joined entries once (linear, not parents × joined)', async () => {
    const parents = Array.from({ length: 20_000 }, (_, i) => make(1, i + 1, { k: i }));
    const children = Array.from({ length: 20_000 }, (_, i) => make(2, i + 1, { k: i % 10_000 }));
    let reads = 0;
    const child = children.map((c) => ({
      ...c,
      get data() {
        reads++;
        return { k: (c.data as { k: number }).k };
      },
    })) as EntryRecord[];
    const result = await runQuery(parents, { type: 'select', join: { C: { dataSourceId: 2, on: { k: 'k' }, count: true } } }, { load: async () => child });
    const counts = (result.entries as { id: number; joins: { C: number } }[]).map((e) => [e.id, e.joins.C]);
    expect(counts.find(([id]) => id === 1)).toEqual([1, 2]);
    expect(counts.find(([id]) => id === 15_000)).toEqual([15_000, 0]);
    expect(reads).toBeLessThan(children.length * 3);
  });
});
