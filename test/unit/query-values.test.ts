import { describe, expect, it } from 'vitest';
import { numericValue } from '../../src/server/data-sources/query/values.js';

describe('numericValue (what "numeric-looking" means for order, $filters and sums)', () => {
  it('reads decimal numbers with sign, fraction, exponent and surrounding spaces', () => {
    expect(['12', ' -3.5 ', '+7', '1e3', '2.5E-1', '.5', '5.', '0', '-0.0'].map(numericValue)).toEqual([12, -3.5, 7, 1000, 0.25, 0.5, 5, 0, -0]);
    expect(numericValue(42)).toBe(42);
  });
  it('refuses everything else', () => {
    for (const text of ['', ' ', '2024-01-10', '1,5', '0x1F', '0b1', '0o7', 'Infinity', '-Infinity', 'NaN', '1e', 'e5', '.', '+', '1 2', '12px', '1e999']) {
      expect(numericValue(text), text).toBeNaN();
    }
    for (const other of [null, undefined, true, [], {}]) expect(numericValue(other)).toBeNaN();
  });
});
