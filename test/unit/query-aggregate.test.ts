import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/server/http/errors.js';
import { convertToNumber, runQuery, validateQuery, type EntryRecord, type QueryBody } from '../../src/server/data-sources/query/index.js';

const noJoins = { load: async () => [] as EntryRecord[] };
const rows = [
  { team: 'a', score: '10', bonus: 1 },
  { team: 'b', score: '2.5', bonus: 2 },
  { team: 'a', score: 'n/a', bonus: 3 },
  { team: 'a', score: 30, bonus: 4 },
  { team: 'b', score: ' 7 ', bonus: 5 },
];
const entries: EntryRecord[] = rows.map((data, i) => ({
  id: i + 1,
  dataSourceId: 3,
  data,
  order: i,
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-01-01T00:00:00.000Z',
}));
const aggregate = async (pipeline: object[], extra: Partial<QueryBody> = {}) =>
  (await runQuery(entries, { type: 'select', aggregate: pipeline, ...extra } as QueryBody, noJoins)).entries;

describe('aggregate', () => {
  it('$convertToNumber turns numeric strings into numbers and the rest into null', async () => {
    expect(convertToNumber(' 7 ')).toBe(7);
    expect(convertToNumber('n/a')).toBeNull();
    expect(convertToNumber(true)).toBeNull();
    const out = await aggregate([{ $project: { _id: 0, id: 1, v: { $convertToNumber: '$data.score' } } }]);
    expect(out).toEqual([
      { id: 1, v: 10 },
      { id: 2, v: 2.5 },
      { id: 3, v: null },
      { id: 4, v: 30 },
      { id: 5, v: 7 },
    ]);
  });
  it('$group with $sum $avg $min $max $count over converted values, then $sort', async () => {
    const out = await aggregate([
      {
        $group: {
          _id: '$data.team',
          total: { $sum: { $convertToNumber: '$data.score' } },
          average: { $avg: { $convertToNumber: '$data.score' } },
          low: { $min: '$data.bonus' },
          high: { $max: '$data.bonus' },
          n: { $count: {} },
        },
      },
      { $sort: { _id: 1 } },
    ]);
    expect(out).toEqual([
      { _id: 'a', total: 40, average: 20, low: 1, high: 4, n: 3 },
      { _id: 'b', total: 9.5, average: 4.75, low: 2, high: 5, n: 2 },
    ]);
  });
  it('without $convertToNumber, $sum ignores strings (why the custom operator exists)', async () => {
    expect(await aggregate([{ $group: { _id: null, total: { $sum: '$data.score' } } }])).toEqual([{ _id: null, total: 30 }]);
  });
  it('runs over the entries matching where; $match, $skip and $limit work', async () => {
    expect(await aggregate([{ $group: { _id: null, s: { $sum: '$data.bonus' } } }], { where: { team: 'b' } })).toEqual([{ _id: null, s: 7 }]);
    const out = await aggregate([
      { $match: { 'data.bonus': { $gte: 2 } } },
      { $sort: { 'data.bonus': -1 } },
      { $skip: 1 },
      { $limit: 2 },
      { $project: { _id: 0, id: 1 } },
    ]);
    expect(out).toEqual([{ id: 4 }, { id: 3 }]);
  });
  it('order, offset and limit select the pipeline input', async () => {
    const out = await aggregate([{ $project: { _id: 0, id: 1 } }], { order: [['data.bonus', 'DESC']], limit: 2, offset: 1 });
    expect(out).toEqual([{ id: 4 }, { id: 3 }]);
  });
  it('stages never modify the stored entries', async () => {
    const before = JSON.stringify(entries);
    await aggregate([{ $set: { 'data.team': 'zzz' } }, { $unset: 'data.score' }]);
    expect(JSON.stringify(entries)).toBe(before);
  });
  it('refuses a non-array pipeline, multi-key stages, and combinations that make no sense', () => {
    const message = (body: unknown) => {
      try {
        validateQuery(body);
      } catch (error) {
        expect((error as HttpError).status).toBe(400);
        return (error as HttpError).message;
      }
      return 'accepted';
    };
    expect(message({ aggregate: { $group: {} } })).toMatch(/aggregate must be an array/);
    expect(message({ aggregate: [{ $sort: { a: 1 }, $limit: 1 }] })).toMatch(/aggregate\[0\] must hold exactly one stage/);
    expect(message({ aggregate: [{ $project: { a: 1 } }], attributes: ['id'] })).toMatch(/attributes cannot be combined/);
    expect(message({ aggregate: [{ $project: { a: 1 } }], join: { X: { dataSourceId: 2, on: { a: 'b' } } } })).toMatch(/join cannot be combined/);
    expect(message({ aggregate: [{ $group: { _id: null, s: { $sum: '$x' } } }] })).toBe('accepted');
  });
  it('a pipeline error from mingo is a 400', async () => {
    const error = await aggregate([{ $group: { total: { $sum: 1 } } }]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
  });
});
