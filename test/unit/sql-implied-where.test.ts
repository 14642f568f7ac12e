import { describe, expect, it } from 'vitest';
import { candidatesCond } from '../../src/server/data-sources/scan-select.js';
import { and, not, or, type Cond } from '../../src/server/data-sources/sql/conditions.js';
import { impliedWhere, translateWhere } from '../../src/server/data-sources/sql/where.js';

/**
 * where.ts `impliedWhere`: the part of a `where` the database tests to pick a scan's candidates. Every entry the
 * `where` matches must meet it (the differential tests in test/integration/scan-select.test.ts and
 * sql-delete-differential.test.ts check that on generated queries); these pin down what is kept and what is left out.
 */
const exact = (where: Record<string, unknown>): Cond => {
  const cond = translateWhere(where);
  expect(cond).not.toBeNull();
  return cond!;
};
const regex = { $regex: '^a' };
/** A `$filters` the database does not take (a numeric segment: no SQL reads an array element as filters.ts does). */
const filters = [{ column: 'name.0', condition: 'contains', value: 'x' }];

describe('impliedWhere', () => {
  it('is the whole translation when the where translates', () => {
    const where = { a: 1, b: { $gt: 2 }, $or: [{ c: 'x' }, { d: null }] };
    expect(impliedWhere(where)).toEqual(exact(where));
  });

  it('leaves out of an AND the keys and operators that do not translate', () => {
    expect(impliedWhere({ a: 1, s: regex, $filters: filters })).toEqual(exact({ a: 1 }));
    expect(impliedWhere({ a: { $gte: 1, $regex: 'x', $size: 2 } })).toEqual(exact({ a: { $gte: 1 } }));
    expect(impliedWhere({ $and: [{ a: 1 }, { s: regex }], b: 2 })).toEqual(and([exact({ a: 1 }), exact({ b: 2 })]));
    expect(impliedWhere({ $or: [{ a: 1, s: regex }, { b: 2 }] })).toEqual(or([exact({ a: 1 }), exact({ b: 2 })]));
  });

  it('keeps a negation only when it translates whole', () => {
    expect(impliedWhere({ $nor: [{ a: 1 }, { s: regex }] })).toBeNull();
    expect(impliedWhere({ $nor: [{ a: 1, s: regex }], b: 2 })).toEqual(exact({ b: 2 }));
    expect(impliedWhere({ a: { $not: { $gt: 1, $regex: 'x' } } })).toBeNull();
    expect(impliedWhere({ a: { $not: { $gt: 1 } } })).toEqual(not(exact({ a: { $gt: 1 } })));
  });

  it('is null when nothing constrains the entries', () => {
    expect(impliedWhere({ $filters: filters })).toBeNull();
    expect(impliedWhere({ s: regex })).toBeNull();
    expect(impliedWhere({ $or: [{ a: 1 }, { s: regex }] })).toBeNull();
    expect(impliedWhere({})).toBeNull();
    expect(impliedWhere(undefined)).toBeNull();
  });

  it('is not used for a column the access rule hides (the JS evaluator sees it missing)', () => {
    const where = { secret: 1, $filters: filters };
    expect(candidatesCond(where, {})).toEqual(exact({ secret: 1 }));
    expect(candidatesCond(where, { exclude: ['secret'] })).toBeNull();
    expect(candidatesCond(where, { include: ['name'] })).toBeNull();
    expect(candidatesCond(where, { include: ['name', 'secret'] })).toEqual(exact({ secret: 1 }));
  });
});
