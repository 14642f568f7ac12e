import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/server/http/errors.js';
import { matchingIds, validateQuery, type EntryRecord } from '../../src/server/data-sources/query/index.js';

const entries: EntryRecord[] = [1, 2, 3, 4].map((id) => ({
  id,
  dataSourceId: 1,
  data: { n: id, even: id % 2 === 0 },
  order: 0,
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-01-01T00:00:00.000Z',
}));

function refusal(body: unknown): string {
  try {
    validateQuery(body);
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    expect((error as HttpError).code).toBe('INVALID_QUERY');
    return (error as HttpError).message;
  }
  throw new Error('expected a 400');
}

describe('validateQuery', () => {
  it('normalises a valid body (type defaults to select; numeric strings for limit/offset)', () => {
    expect(validateQuery({})).toEqual({ type: 'select' });
    expect(validateQuery({ type: 'select', where: { n: 1 }, limit: '10', offset: 0, order: [['id', 'DESC']], includePagination: true, extra: 1 })).toEqual({
      type: 'select',
      where: { n: 1 },
      limit: 10,
      offset: 0,
      order: [['id', 'DESC']],
      includePagination: true,
    });
  });
  it('refuses bad bodies, naming the field', () => {
    expect(refusal(null)).toBe('query body must be an object');
    expect(refusal([])).toBe('query body must be an object');
    expect(refusal({ type: 'update' })).toBe('type must be select or delete');
    expect(refusal({ where: [] })).toBe('where must be an object');
    expect(refusal({ where: { n: { $where: '1' } } })).toMatch(/^where\.n\.\$where: operator \$where is not allowed/);
    expect(refusal({ order: [['id', 'ASC', 'x']] })).toBe("order[0] must be [column, 'ASC' | 'DESC']");
    expect(refusal({ order: [['id', 'Desc']] })).toBe('order[0][1] must be ASC or DESC');
    expect(refusal({ join: [] })).toMatch(/^join must be an object/);
  });
  it('type delete accepts only where: limit, offset, join and aggregate are refused', () => {
    expect(validateQuery({ type: 'delete', where: { even: true } })).toEqual({ type: 'delete', where: { even: true } });
    expect(refusal({ type: 'delete', limit: 1 })).toMatch(/limit cannot be used with type delete/);
    expect(refusal({ type: 'delete', offset: 2 })).toMatch(/offset cannot be used with type delete/);
    expect(refusal({ type: 'delete', aggregate: [] })).toMatch(/aggregate cannot be used with type delete/);
    expect(refusal({ type: 'delete', join: { X: { dataSourceId: 2, on: { a: 'b' } } } })).toMatch(/join cannot be used with type delete/);
  });
});

describe('matchingIds (type delete)', () => {
  it('returns the ids of every entry matching where, including $filters', () => {
    expect(matchingIds(entries, { type: 'delete', where: { even: true } })).toEqual([2, 4]);
    expect(matchingIds(entries, { type: 'delete', where: { $filters: [{ column: 'n', condition: '>', value: '2' }] } })).toEqual([3, 4]);
    expect(matchingIds(entries, { type: 'delete' })).toEqual([1, 2, 3, 4]);
    expect(matchingIds(entries, { type: 'delete', where: { n: 99 } })).toEqual([]);
  });
  it('refuses a bad where before anything is matched', () => {
    expect(() => matchingIds(entries, { type: 'delete', where: { $where: 'true' } })).toThrow(HttpError);
  });
});
