import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/server/http/errors.js';
import { compileWhere, type EntryRecord } from '../../src/server/data-sources/query/index.js';

const rows: Record<string, unknown>[] = [
  /* 1 */ { name: 'Alice', qty: '10', price: 5, tags: ['Red', 'blue'], note: '', when: '2024-03-01', at: '2024-03-01 09:15', time: '09:15' },
  /* 2 */ { name: 'bob', qty: 9, price: '7.5', tags: [], note: null, when: '2024-03-02', at: '2024-03-02T18:40:00Z', time: '18:40' },
  /* 3 */ { name: 'Carla', qty: '100', price: 12, tags: ['green'], note: 'hi', when: '2023-12-31', at: '2024-03-01T23:30:00+02:00', time: '23:59' },
  /* 4 */ { name: 'dan', price: null, note: 'x', when: 'not a date', at: 1709251200000 },
];
const entries: EntryRecord[] = rows.map((data, i) => ({
  id: i + 1,
  dataSourceId: 1,
  data,
  order: 0,
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-01-01T00:00:00.000Z',
}));

const ids = (...filters: Record<string, unknown>[]) => entries.filter(compileWhere({ $filters: filters })).map((e) => e.id);
const refused = (filter: Record<string, unknown>) => {
  try {
    compileWhere({ $filters: [filter] });
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    return (error as HttpError).message;
  }
  throw new Error('expected a 400');
};

describe('$filters conditions', () => {
  it('== is case-insensitive for text and numeric across numbers and numeric strings', () => {
    expect(ids({ column: 'name', condition: '==', value: 'ALICE' })).toEqual([1]);
    expect(ids({ column: 'qty', condition: '==', value: 10 })).toEqual([1]);
    expect(ids({ column: 'qty', condition: '==', value: '9.0' })).toEqual([2]);
    expect(ids({ column: 'tags', condition: '==', value: 'red' })).toEqual([1]);
    expect(ids({ column: 'note', condition: '==', value: null })).toEqual([2]);
  });
  it('!= is the negation of ==', () => {
    expect(ids({ column: 'name', condition: '!=', value: 'bob' })).toEqual([1, 3, 4]);
  });
  it('> >= < <= compare numeric strings as numbers', () => {
    expect(ids({ column: 'qty', condition: '>', value: 9 })).toEqual([1, 3]);
    expect(ids({ column: 'qty', condition: '>=', value: '10' })).toEqual([1, 3]);
    expect(ids({ column: 'qty', condition: '<', value: 10 })).toEqual([2]);
    expect(ids({ column: 'price', condition: '<=', value: 7.5 })).toEqual([1, 2]);
    expect(ids({ column: 'name', condition: '>', value: 'a' })).toEqual([2, 4]); // text: code-unit order
  });
  it('contains / notcontains are case-insensitive substrings', () => {
    expect(ids({ column: 'name', condition: 'contains', value: 'AR' })).toEqual([3]);
    expect(ids({ column: 'tags', condition: 'contains', value: 'LU' })).toEqual([1]);
    expect(ids({ column: 'name', condition: 'notcontains', value: 'a' })).toEqual([2]);
    expect(ids({ column: 'qty', condition: 'contains', value: 0 })).toEqual([1, 3]);
  });
  it('empty: missing, null, empty string or empty array; notempty is the rest', () => {
    expect(ids({ column: 'note', condition: 'empty' })).toEqual([1, 2]);
    expect(ids({ column: 'tags', condition: 'empty' })).toEqual([2, 4]);
    expect(ids({ column: 'tags', condition: 'notempty' })).toEqual([1, 3]);
  });
  it('between is inclusive and numeric for numeric values', () => {
    expect(ids({ column: 'qty', condition: 'between', value: { from: 9, to: '10' } })).toEqual([1, 2]);
    expect(ids({ column: 'price', condition: 'between', value: { from: 7.5 } })).toEqual([2, 3]);
    expect(refused({ column: 'qty', condition: 'between', value: 3 })).toMatch(/\$filters\[0\]\.value must be an object/);
  });
  it('oneof takes an array or a comma-separated string', () => {
    expect(ids({ column: 'name', condition: 'oneof', value: ['alice', 'DAN'] })).toEqual([1, 4]);
    expect(ids({ column: 'name', condition: 'oneof', value: 'bob, carla' })).toEqual([2, 3]);
    expect(ids({ column: 'qty', condition: 'oneof', value: '9,100' })).toEqual([2, 3]);
    expect(ids({ column: 'tags', condition: 'oneof', value: 'green,purple' })).toEqual([3]);
  });
  it('dateis compares the same calendar unit (default: the precision of the value)', () => {
    expect(ids({ column: 'when', condition: 'dateis', value: '2024-03-01' })).toEqual([1]);
    expect(ids({ column: 'at', condition: 'dateis', value: '2024-03-01' })).toEqual([1, 3, 4]); // 23:30+02:00 is 21:30 UTC
    expect(ids({ column: 'when', condition: 'dateis', value: '2024-03-15', unit: 'month' })).toEqual([1, 2]);
    expect(ids({ column: 'when', condition: 'dateis', value: '2024-07-01', unit: 'year' })).toEqual([1, 2]);
    expect(ids({ column: 'at', condition: 'dateis', value: '2024-03-01 09:15' })).toEqual([1]);
    expect(ids({ column: 'at', condition: 'dateis', value: '2024-03-01 09:59', unit: 'hour' })).toEqual([1]);
    expect(ids({ column: 'at', condition: 'dateis', value: '2024-03-02 18:40:00', unit: 'second' })).toEqual([2]);
    expect(ids({ column: 'time', condition: 'dateis', value: '18:40' })).toEqual([2]);
  });
  it('datebefore / dateafter with dates, date-times and times of day', () => {
    expect(ids({ column: 'when', condition: 'datebefore', value: '2024-03-01' })).toEqual([3]);
    expect(ids({ column: 'when', condition: 'dateafter', value: '2024-03-01' })).toEqual([2]);
    expect(ids({ column: 'at', condition: 'dateafter', value: '2024-03-01 21:00' })).toEqual([2, 3]);
    expect(ids({ column: 'at', condition: 'datebefore', value: '2024-03-01 09:16' })).toEqual([1, 4]);
    // time of day: only the time is compared, of HH:mm values and of date-times (UTC)
    expect(ids({ column: 'time', condition: 'dateafter', value: '12:00' })).toEqual([2, 3]);
    expect(ids({ column: 'at', condition: 'datebefore', value: '10:00' })).toEqual([1, 4]);
  });
  it('datebetween is inclusive with from: { value } and to: { value }', () => {
    expect(ids({ column: 'when', condition: 'datebetween', from: { value: '2024-01-01' }, to: { value: '2024-03-01' } })).toEqual([1]);
    expect(ids({ column: 'when', condition: 'datebetween', from: { value: '2023-12-31' }, to: { value: '2024-03-02' } })).toEqual([1, 2, 3]);
    expect(ids({ column: 'time', condition: 'datebetween', from: { value: '09:15' }, to: { value: '18:40' } })).toEqual([1, 2]);
    expect(refused({ column: 'when', condition: 'datebetween', from: { value: '2024-01-01' }, to: { value: '10:00' } })).toMatch(/both be dates/);
    expect(refused({ column: 'when', condition: 'datebetween' })).toMatch(/needs from/);
  });
  it('several filters are ANDed', () => {
    expect(ids({ column: 'qty', condition: 'notempty' }, { column: 'name', condition: 'contains', value: 'a' })).toEqual([1, 3]);
  });
  it('refuses unknown conditions and bad values, naming the field', () => {
    expect(refused({ column: 'name', condition: 'like', value: 'a' })).toMatch(/\$filters\[0\]\.condition must be one of/);
    expect(refused({ condition: '==', value: 1 })).toMatch(/\$filters\[0\]\.column/);
    expect(refused({ column: 'when', condition: 'dateis', value: '03/01/2024' })).toMatch(/must be a date/);
    expect(refused({ column: 'when', condition: 'dateis', value: '2024-02-30' })).toMatch(/must be a date/);
    expect(refused({ column: 'when', condition: 'dateis', value: '2024-03-01', unit: 'week' })).toMatch(/unit must be one of/);
    expect(refused({ column: 'time', condition: 'dateis', value: '10:00', unit: 'day' })).toMatch(/hour, minute or second/);
    expect(refused({ column: 'name', condition: '==', value: { a: 1 } })).toMatch(/value must be a string/);
    expect(refused({ column: 'name', condition: 'oneof', value: 5 })).toMatch(/array or a comma-separated string/);
    expect(() => compileWhere({ $filters: {} })).toThrow(/\$filters must be an array/);
  });
});
