import { afterEach, describe, expect, it } from 'vitest';
import { compileWhere, type EntryRecord } from '../../src/server/data-sources/query/index.js';
import { whereOptions } from '../../src/server/data-sources/query/where.js';
import { compileFastWhere } from '../../src/server/data-sources/query/where-fast.js';

/** The fast path for simple `where` shapes must give exactly sift's results, entry by entry. */
let seed = 12345;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const SCALARS = [0, 1, 2, 5, -1, 2.5, '1', '2', '5', 'a', 'A', 'b', 'abc', '', true, false, null];
function value(depth = 0): unknown {
  const r = random();
  if (r < 0.6 || depth > 1) return pick(SCALARS);
  if (r < 0.8) return Array.from({ length: Math.floor(random() * (depth === 0 ? 5 : 3)) }, () => value(depth + 1));
  return { x: value(depth + 1), y: pick(SCALARS) };
}
const entries: EntryRecord[] = Array.from({ length: 400 }, (_, i) => {
  const data: Record<string, unknown> = {};
  for (const key of ['a', 'b', 'c']) if (random() < 0.85) data[key] = value();
  if (random() < 0.7) data.n = random() < 0.7 ? { x: pick(SCALARS), y: value(1) } : value();
  return { id: i + 1, dataSourceId: 1, data, order: 0, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-01T00:00:00.000Z' };
});

function condition(): unknown {
  const op = pick(['plain', '$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$regex', '$iLike', 'range']);
  switch (op) {
    case 'plain':
      return pick(SCALARS);
    case '$in':
    case '$nin':
      return { [op]: Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(SCALARS)) };
    case '$exists':
      return { $exists: random() < 0.5 };
    case '$regex':
      return random() < 0.5 ? { $regex: '^a' } : { $regex: 'B', $options: 'i' };
    case '$iLike':
      return { $iLike: pick(['a', 'B', '%c', '1']) };
    case 'range':
      return { $gte: pick([0, 1, '1', 'a']), $lt: pick([5, '5', 'b']) };
    default:
      return { [op]: pick(SCALARS) };
  }
}

afterEach(() => {
  whereOptions.fastPath = true;
});

describe('where fast path', () => {
  it('applies to simple shapes only', () => {
    const full = () => true;
    const iLike = () => () => true;
    expect(compileFastWhere({ a: { $gt: 1, $lte: 5 }, 'n.x': 'a', b: { $in: [1, null] } }, full, iLike)).toBeTypeOf('function');
    expect(compileFastWhere({ $or: [{ a: 1 }] }, full, iLike)).toBeNull();
    expect(compileFastWhere({ a: { $size: 1 } }, full, iLike)).toBeNull();
    expect(compileFastWhere({ 'a.0': 1 }, full, iLike)).toBeNull();
    expect(compileFastWhere({ constructor: 1 }, full, iLike)).toBeNull();
    // values it cannot decide go to the full tester
    let delegated = 0;
    const fast = compileFastWhere({ a: 1 }, () => (delegated++, true), iLike)!;
    // An array of scalars is read element-wise (equality-like operators); nested arrays and objects go to sift.
    expect([fast({ a: 1 }), fast({ a: 2 }), fast({ a: [1] }), fast({ a: [2, 3] }), fast({ a: { b: 1 } }), fast({ a: [[1]] })]).toEqual([
      true,
      false,
      true,
      false,
      true,
      true,
    ]);
    expect(delegated).toBe(2);
    expect(
      compileFastWhere(
        { a: { $in: [1, 2], $ne: 3 } },
        () => {
          throw new Error('delegated');
        },
        iLike,
      )!({ a: [2, 3] }),
    ).toBe(false);
  });

  it('matches plain sift on 1,500 random queries over values of every shape', () => {
    let compared = 0;
    let nonEmpty = 0;
    for (let q = 0; q < 1500; q++) {
      const where: Record<string, unknown> = {};
      const columns = ['a', 'b', 'c', 'n.x', 'n.y', 'missing'];
      for (let k = 0; k < 1 + Math.floor(random() * 2); k++) where[pick(columns)] = condition();
      whereOptions.fastPath = true;
      const fast = entries.filter(compileWhere(where)).map((e) => e.id);
      whereOptions.fastPath = false;
      const slow = entries.filter(compileWhere(where)).map((e) => e.id);
      expect(fast, JSON.stringify(where)).toEqual(slow);
      compared++;
      if (slow.length > 0 && slow.length < entries.length) nonEmpty++;
    }
    expect(compared).toBe(1500);
    expect(nonEmpty).toBeGreaterThan(500); // the queries discriminate, so the comparison means something
  });
});
