/**
 * A seeded generator of entry data and `aggregate` query bodies for the SQL aggregation differential test
 * (test/integration/sql-aggregate-differential.test.ts). The data adds to query-generator.ts's columns some
 * that are worth grouping on and accumulating: mostly clean (scalars of mixed types, integers and dyadic
 * fractions) with now and then what the translation must hand to mingo (arrays, objects, decimal fractions,
 * strings from U+E000 up).
 */
import { entryData as baseData, seededRandom, where, type Rng } from './query-generator.js';

export { seededRandom };

const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const int = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));

const GROUPS: readonly unknown[] = ['a', 'b', 'B', 'é', '名前', '', '3', 3, 1, 0, -2.5, true, false, null, 'zeta', 'a b'];
const ODD: readonly unknown[] = [[1], [], ['a', 'b'], { x: 1 }, {}, '\uE000', 'a\uFFFD', '😀'];

/** Integers, dyadic fractions, and sometimes something else. */
function amount(rng: Rng, dirt: number): unknown {
  const r = rng();
  if (r < 0.55) return int(rng, -50, 200);
  if (r < 0.75) return int(rng, -40, 40) + pick(rng, [0.5, 0.25, 0.125, 0.75]);
  if (r < 0.8) return pick(rng, ['7', '1e3', 'x', '']);
  if (r < 0.85) return rng() < 0.5;
  if (r < 0.9) return null;
  if (r < 0.9 + dirt) return pick(rng, [0.1, 0.30000000000000004, 1e21, 2 ** 53, 123.456, [1, 2], { v: 1 }]);
  return int(rng, 0, 9);
}

export function entryData(rng: Rng): Record<string, unknown> {
  const data = baseData(rng);
  const maybe = (key: string, make: () => unknown) => {
    if (rng() < 0.88) data[key] = make();
  };
  maybe('g', () => pick(rng, GROUPS));
  maybe('h', () => (rng() < 0.97 ? pick(rng, ['x', 'y', 'z', 1, 2, true, null]) : pick(rng, ODD)));
  maybe('v', () => amount(rng, 0));
  maybe('f', () => amount(rng, 0.08));
  maybe('o', () => (rng() < 0.9 ? { x: rng() < 0.8 ? pick(rng, GROUPS) : amount(rng, 0), y: int(rng, 0, 3) } : rng() < 0.5 ? [{ x: 1 }] : 'flat'));
  // Prices: decimal fractions, whose sums depend on the order of the additions (the translation must decline).
  maybe('p', () => (rng() < 0.6 ? pick(rng, [19.99, 0.1, 0.2, 5.55, 2.675, 1.1, 0.7, 3.3]) : int(rng, 1, 30)));
  // A category the key's index answers alone (no booleans, no numeric strings, no arrays).
  maybe('c', () => pick(rng, ['red', 'green', 'blue', 'é', '名前', '', 'a b', 1, 2.5, -3, null]));
  maybe('t', () => pick(rng, ['apple', 'Apple', 'banana', 'é', 'Z', '~', '10', '9', 'a b', '名前', '']));
  return data;
}

/** Clean paths (g, t, v, b, nope) most of the time; dirty ones (arrays, objects, decimal fractions) now and then. */
const KEYS: readonly unknown[] = [
  null,
  null,
  '$data.g',
  '$data.g',
  '$data.g',
  '$data.b',
  '$data.b',
  '$data.v',
  '$data.t',
  '$data.t',
  '$data.nope',
  '$data.h',
  '$data.o.x',
  '$data.k',
  '$data.tags',
  { a: '$data.g', b: '$data.t' },
  { a: '$data.g', b: '$data.t' },
  { t: '$data.t' },
  { x: '$data.b', n: '$data.nope' },
  { x: '$data.o.x', n: '$data.nope' },
];
const STRING_KEYS = KEYS.filter((key) => typeof key === 'string');
const VALUES = ['v', 'v', 'v', 'v', 'g', 'g', 't', 't', 'b', 'nope', 'f', 'p', 'h', 'o.x', 'k', 'n'];

function accumulator(rng: Rng): Record<string, unknown> {
  const path = `$data.${pick(rng, VALUES)}`;
  const r = rng();
  if (r < 0.12) return { $sum: 1 };
  if (r < 0.17) return { $sum: pick(rng, [2, 0.5, -1, 0]) };
  if (r < 0.24) return { $count: {} };
  if (r < 0.44) return { $sum: path };
  if (r < 0.6) return { $avg: path };
  if (r < 0.76) return { $min: path };
  if (r < 0.93) return { $max: path };
  return pick(rng, [{ $first: path }, { $push: path }, { $sum: [path] }, { $sum: '$order' }]);
}

/** A `$match` on `data.` paths (from query-generator's `where`), with now and then something untranslated. */
function match(rng: Rng): Record<string, unknown> {
  const prefix = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(prefix);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$and' || key === '$or' || key === '$nor') out[key] = prefix(value);
      else if (!key.startsWith('$')) out[`data.${key}`] = value;
    }
    return out;
  };
  if (rng() < 0.15) return prefix(where(rng, { maxId: 1, times: [] }, 0, false)) as Record<string, unknown>;
  const m: Record<string, unknown> = {};
  for (let i = 0, count = int(rng, 1, 2); i < count; i++) m[`data.${pick(rng, MATCHED)}`] = test(rng);
  if (rng() < 0.15) return { [pick(rng, ['$or', '$nor', '$and'])]: [m, { [`data.${pick(rng, MATCHED)}`]: test(rng) }] };
  if (rng() < 0.04) m.id = { $gt: 3 };
  return m;
}

const MATCHED = ['g', 'g', 'v', 'v', 't', 't', 'b', 'nope', 'o.x', 'h', 'f'];
const OPERANDS: readonly unknown[] = [...GROUPS, 10, 50, -5, 'apple', 'm', 0.5];

function test(rng: Rng): unknown {
  const r = rng();
  if (r < 0.2) return pick(rng, OPERANDS);
  if (r < 0.3) return { $eq: pick(rng, OPERANDS) };
  if (r < 0.4) return { $ne: pick(rng, OPERANDS) };
  if (r < 0.65) return { [pick(rng, ['$gt', '$gte', '$lt', '$lte'])]: rng() < 0.7 ? int(rng, -20, 120) : pick(rng, ['a', 'B', 'm', '名'] as const) };
  if (r < 0.75) return { $in: [pick(rng, OPERANDS), pick(rng, OPERANDS)] };
  if (r < 0.82) return { $nin: [pick(rng, OPERANDS)] };
  if (r < 0.9) return { $exists: rng() < 0.6 };
  return { $not: { $gt: int(rng, 0, 50) } };
}

/** A select body with `aggregate`: [$match], $group, then $sort / $skip / $limit / $project now and then. */
export function aggregateBody(rng: Rng, bounds: { maxId: number; times: string[] }): Record<string, unknown> {
  // Counting groups over every entry (what an index on the key answers alone, aggregate-indexed.ts).
  if (rng() < 0.15) {
    const group: Record<string, unknown> = {
      _id: rng() < 0.6 ? '$data.c' : pick(rng, STRING_KEYS),
      n: { $sum: 1 },
    };
    if (rng() < 0.4) group.c = pick(rng, [{ $count: {} }, { $sum: 2 }, { $sum: -0.5 }]);
    const pipeline: Record<string, unknown>[] = [{ $group: group }];
    if (rng() < 0.5) pipeline.push({ $sort: { [pick(rng, ['_id', 'n'])]: rng() < 0.5 ? 1 : -1 } });
    return { aggregate: pipeline };
  }
  const pipeline: Record<string, unknown>[] = [];
  if (rng() < 0.4) pipeline.push({ $match: match(rng) });
  const group: Record<string, unknown> = { _id: pick(rng, KEYS) };
  const names = ['n', 'total', 'avg', 'lo', 'hi'];
  for (let i = 0, count = int(rng, 1, 3); i < count; i++) group[names[i]!] = accumulator(rng);
  pipeline.push({ $group: group });
  const outputs = ['_id', ...Object.keys(group).filter((k) => k !== '_id')];
  if (rng() < 0.55) {
    const sort: Record<string, number> = {};
    for (let i = 0, count = int(rng, 1, 2); i < count; i++) sort[pick(rng, outputs)] = rng() < 0.5 ? 1 : -1;
    pipeline.push({ $sort: sort });
  }
  if (rng() < 0.15) pipeline.push({ $skip: int(rng, 0, 3) });
  if (rng() < 0.3) pipeline.push({ $limit: int(rng, 1, 6) });
  if (rng() < 0.1) pipeline.push({ $project: { _id: 1, [outputs[outputs.length - 1]!]: 1 } });
  const body: Record<string, unknown> = { aggregate: pipeline };
  if (rng() < 0.3) body.where = where(rng, bounds);
  if (rng() < 0.04) body.limit = int(rng, 1, 30);
  if (rng() < 0.03) body.order = [['id', 'ASC']];
  return body;
}
