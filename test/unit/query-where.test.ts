import { describe, expect, it } from 'vitest';
import { compileWhere, type EntryRecord } from '../../src/server/data-sources/query/index.js';

const entry = (id: number, data: Record<string, unknown>, extra: Partial<EntryRecord> = {}): EntryRecord => ({
  id,
  dataSourceId: 1,
  data,
  order: 0,
  createdAt: `2024-01-0${id}T00:00:00.000Z`,
  updatedAt: `2024-01-0${id}T00:00:00.000Z`,
  ...extra,
});

const entries: EntryRecord[] = [
  entry(1, { name: 'Alice', age: 30, tags: ['a', 'b'], city: 'Paris', role: { name: 'Admin' }, scores: [{ s: 5 }, { s: 9 }] }),
  entry(2, { name: 'bob', age: 25, tags: ['b'], city: null, role: { name: 'User' }, scores: [{ s: 1 }] }),
  entry(3, { name: 'Carla', age: 41, tags: [], role: { name: 'user' }, scores: [] }),
  entry(4, { name: 'Dan', age: '35', tags: ['a', 'c'], city: 'Lyon' }),
];

const ids = (where: unknown) => entries.filter(compileWhere(where)).map((e) => e.id);

describe('compileWhere: sift operators on data', () => {
  it('matches everything without where', () => {
    expect(ids(undefined)).toEqual([1, 2, 3, 4]);
    expect(ids({})).toEqual([1, 2, 3, 4]);
  });
  it('$eq and plain equality, $ne', () => {
    expect(ids({ name: 'bob' })).toEqual([2]);
    expect(ids({ age: { $eq: 30 } })).toEqual([1]);
    expect(ids({ name: { $ne: 'bob' } })).toEqual([1, 3, 4]);
  });
  it('$gt $gte $lt $lte compare like sift (numbers with numbers)', () => {
    expect(ids({ age: { $gt: 30 } })).toEqual([3]);
    expect(ids({ age: { $gte: 30 } })).toEqual([1, 3]);
    expect(ids({ age: { $lt: 30 } })).toEqual([2]);
    expect(ids({ age: { $lte: 30 } })).toEqual([1, 2]);
  });
  it('$in $nin', () => {
    expect(ids({ city: { $in: ['Paris', 'Lyon'] } })).toEqual([1, 4]);
    expect(ids({ city: { $nin: ['Paris', null] } })).toEqual([4]);
  });
  it('$exists', () => {
    expect(ids({ city: { $exists: true } })).toEqual([1, 2, 4]);
    expect(ids({ city: { $exists: false } })).toEqual([3]);
  });
  it('$regex with $options', () => {
    expect(ids({ name: { $regex: '^c' } })).toEqual([]);
    expect(ids({ name: { $regex: '^c', $options: 'i' } })).toEqual([3]);
  });
  it('$and $or $nor $not', () => {
    // sift compares numbers with numbers only: Dan's age is the string '35'.
    expect(ids({ $and: [{ age: { $gt: 20 } }, { tags: 'a' }] })).toEqual([1]);
    expect(ids({ $or: [{ name: 'bob' }, { city: 'Lyon' }] })).toEqual([2, 4]);
    expect(ids({ $nor: [{ name: 'bob' }, { city: 'Lyon' }] })).toEqual([1, 3]);
    expect(ids({ age: { $not: { $gt: 29 } } })).toEqual([2, 4]);
  });
  it('$mod $all $size $type $elemMatch', () => {
    expect(ids({ age: { $mod: [5, 0] } })).toEqual([1, 2, 4]);
    expect(ids({ age: { $mod: [2, 1] } })).toEqual([2, 3, 4]);
    expect(ids({ tags: { $all: ['a', 'b'] } })).toEqual([1]);
    expect(ids({ tags: { $size: 0 } })).toEqual([3]);
    expect(ids({ age: { $type: 'string' } })).toEqual([4]);
    expect(ids({ scores: { $elemMatch: { s: { $gt: 4 } } } })).toEqual([1]);
  });
  it('dotted paths reach nested values; array fields match any element', () => {
    expect(ids({ 'role.name': 'Admin' })).toEqual([1]);
    expect(ids({ tags: 'c' })).toEqual([4]);
  });
  it('$iLike is a case-insensitive contains, or an anchored ILIKE pattern with %', () => {
    expect(ids({ name: { $iLike: 'AR' } })).toEqual([3]);
    expect(ids({ 'role.name': { $iLike: 'user' } })).toEqual([2, 3]);
    expect(ids({ name: { $iLike: 'b%' } })).toEqual([2]);
    expect(ids({ name: { $iLike: '%a' } })).toEqual([3]);
    expect(ids({ name: { $iLike: 'd_n' } })).toEqual([]);
    expect(ids({ name: { $iLike: 'd_n%' } })).toEqual([4]);
  });
  it('$id / $createdAt reach entry fields; plain id is a data column', () => {
    expect(ids({ $id: { $in: [2, 4] } })).toEqual([2, 4]);
    expect(ids({ $id: 3 })).toEqual([3]);
    expect(ids({ $createdAt: { $gte: '2024-01-03' } })).toEqual([3, 4]);
    expect(ids({ id: 1 })).toEqual([]);
  });
  it('combines $filters with the rest of where (AND)', () => {
    expect(ids({ tags: 'a', $filters: [{ column: 'name', condition: 'contains', value: 'AN' }] })).toEqual([4]);
  });
  it('a compiled tester is reusable and stateless across entries', () => {
    const test = compileWhere({ $or: [{ tags: { $elemMatch: { $eq: 'c' } } }, { age: { $lt: 26 } }] });
    expect(entries.filter(test).map((e) => e.id)).toEqual([2, 4]);
    expect(entries.filter(test).map((e) => e.id)).toEqual([2, 4]);
  });
});
