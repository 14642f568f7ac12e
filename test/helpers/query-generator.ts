/**
 * A seeded generator of entry data and query bodies for the SQL differential test
 * (test/integration/sql-differential.test.ts): mixed types in every column (numbers, numeric strings, text,
 * dates as strings, booleans, null, missing, arrays, nested arrays, objects, arrays of objects).
 */

/** mulberry32: small, fast, deterministic. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Rng = () => number;
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const int = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));

export const NUMBERS = [0, 1, -1, 2, 3, 3.5, 10, 42, 100, -7.25, 0.1, 0.30000000000000004, 1e21, 1.5e-7, 2 ** 53, -0.5];
export const STRINGS = [
  '',
  'a',
  'A',
  'abc',
  'Abc',
  'b',
  'ba',
  'zeta',
  'é',
  'É',
  'ü',
  '名前',
  '3',
  '3.0',
  ' 4',
  '10',
  '-1',
  '1e3',
  'true',
  'false',
  'null',
  '2024-01-05',
  '2024-01-05T10:00:00Z',
  '2023-12-31',
  '2024-01-05 09:30',
  'x y',
  'a.b',
  'Zürich',
  '\u00ff',
  '~',
  'a*b',
  '[a]?',
  '😀a',
];
export const SCALARS: readonly unknown[] = [...NUMBERS, ...STRINGS, true, false, null];

export const COLUMNS = ['n', 's', 'b', 'd', 'tags', 'obj', 'mixed', 'deep'] as const;
export const PATHS = ['n', 's', 'b', 'd', 'tags', 'obj', 'obj.x', 'obj.y', 'obj.y.z', 'mixed', 'mixed.x', 'deep.a.b', 'tags.x', 'nope', 'nope.x', 'k'];

function scalar(rng: Rng, kind: 'number' | 'string' | 'any'): unknown {
  if (kind === 'number') return pick(rng, NUMBERS);
  if (kind === 'string') return pick(rng, STRINGS);
  return pick(rng, SCALARS);
}

/** A value of up to `depth` levels of arrays and objects. */
export function value(rng: Rng, depth: number, kind: 'number' | 'string' | 'any' = 'any'): unknown {
  const r = rng();
  if (depth <= 0 || r < 0.7) return scalar(rng, kind);
  if (r < 0.85) return Array.from({ length: int(rng, 0, 3) }, () => value(rng, depth - 1, kind));
  const out: Record<string, unknown> = {};
  if (rng() < 0.7) out.x = value(rng, depth - 1, kind);
  if (rng() < 0.5) out.y = rng() < 0.5 ? { z: value(rng, depth - 2, kind) } : value(rng, depth - 1, kind);
  if (rng() < 0.2) out.z = scalar(rng, kind);
  return out;
}

/** One entry's data: each column present most of the time, with its usual type most of the time. */
export function entryData(rng: Rng): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  const maybe = (key: string, make: () => unknown) => {
    if (rng() < 0.85) data[key] = make();
  };
  maybe('n', () => (rng() < 0.7 ? scalar(rng, 'number') : rng() < 0.5 ? pick(rng, ['3', '10', ' 4', '-1', '1e3', '3.0']) : value(rng, 2)));
  maybe('s', () => (rng() < 0.75 ? scalar(rng, 'string') : value(rng, 2)));
  maybe('b', () => (rng() < 0.6 ? rng() < 0.5 : pick(rng, [0, 1, 'true', 'false', null])));
  maybe('d', () => (rng() < 0.7 ? pick(rng, ['2024-01-05', '2023-12-31', '2024-02-29T08:00:00Z', '2024-01-05 09:30', '2025-06-01']) : value(rng, 1)));
  maybe('tags', () => (rng() < 0.7 ? Array.from({ length: int(rng, 0, 4) }, () => (rng() < 0.15 ? value(rng, 2) : scalar(rng, 'any'))) : value(rng, 2)));
  maybe('obj', () => value(rng, 3));
  maybe('mixed', () => value(rng, 3));
  maybe('deep', () => (rng() < 0.5 ? { a: rng() < 0.5 ? { b: scalar(rng, 'any') } : [{ b: scalar(rng, 'any') }, { b: value(rng, 1) }] } : value(rng, 3)));
  // A column of mostly orderable values (numbers, plain text, booleans, null), rarely not (numeric strings, objects).
  maybe('k', () => {
    const r = rng();
    if (r < 0.65) return scalar(rng, 'number');
    if (r < 0.85) return pick(rng, ['', 'a', 'B', 'abc', 'é', '名前', '2024-01-05', 'x y', 'Zürich', '~', '-', 'e', '1.2.3']);
    if (r < 0.92) return rng() < 0.5;
    if (r < 0.98) return null;
    return rng() < 0.5 ? pick(rng, ['3', ' 4', '1e3']) : { x: 1 };
  });
  return data;
}

/** An operand: mostly scalars; sometimes something only the JS evaluator handles. */
function operand(rng: Rng): unknown {
  const r = rng();
  if (r < 0.93) return pick(rng, SCALARS);
  if (r < 0.97) return [pick(rng, SCALARS)];
  return { x: pick(rng, SCALARS) };
}

const COMPARISONS = ['$gt', '$gte', '$lt', '$lte'] as const;

/** `$like`/`$iLike` patterns: some translate (sql/where.ts `like`), some are left to the JS evaluator. */
export const LIKE_PATTERNS = [
  'a',
  'A',
  '%a',
  'a%',
  '%b%',
  'Ab%',
  '%é%',
  'É',
  'zü',
  '%_',
  '_a',
  'a_',
  '%a%c',
  '%%',
  '%',
  '3',
  '%3%',
  '1e%',
  '名%',
  'x y',
  '%.%',
  'Zür%',
  '%y',
  'ZETA',
  '%Z%',
  'a*',
  '[a]%',
  '%?',
  '%]?',
  'rue',
  'TRUE',
  '😀%',
  '%-%',
  'e',
  '%E',
  'ba%%',
  '%%a%%',
];

/** A value query on one path: plain equality or 1-2 operators (sometimes under $not). */
function condition(rng: Rng, depth = 0, likes = true): unknown {
  const r = rng();
  if (r < 0.2) return operand(rng);
  const ops: Record<string, unknown> = {};
  const count = rng() < 0.8 ? 1 : 2;
  for (let i = 0; i < count; i++) {
    const k = rng();
    if (k < 0.12) ops.$eq = operand(rng);
    else if (k < 0.24) ops.$ne = operand(rng);
    else if (k < 0.5) ops[pick(rng, COMPARISONS)] = rng() < 0.6 ? pick(rng, NUMBERS) : pick(rng, STRINGS);
    else if (k < 0.64) ops.$in = Array.from({ length: int(rng, 0, 4) }, () => pick(rng, SCALARS));
    else if (k < 0.74) ops.$nin = Array.from({ length: int(rng, 0, 3) }, () => pick(rng, SCALARS));
    else if (k < 0.86) ops.$exists = rng() < 0.5;
    else if (k < 0.94 && depth === 0) ops.$not = condition(rng, 1, likes) as object;
    else if (k < 0.955) ops.$size = int(rng, 0, 2);
    else if (k < 0.99) {
      const pattern = pick(rng, LIKE_PATTERNS);
      if (likes) ops[rng() < 0.5 ? '$like' : '$iLike'] = pattern;
      else ops.$eq = pattern; // aggregate `$match` (mingo) has no $like
    } else ops.$regex = '^a';
  }
  // $not needs an object of operators.
  if (ops.$not !== undefined && (typeof ops.$not !== 'object' || ops.$not === null || Array.isArray(ops.$not))) ops.$not = { $eq: ops.$not };
  return ops;
}

const ENTRY_FIELDS = ['$id', '$order', '$createdAt', '$updatedAt'] as const;

function entryFieldCondition(rng: Rng, field: (typeof ENTRY_FIELDS)[number], bounds: { maxId: number; times: string[] }): unknown {
  const v = () => (field === '$id' ? int(rng, 0, bounds.maxId + 1) : field === '$order' ? int(rng, -1, 60) : pick(rng, bounds.times));
  const r = rng();
  if (r < 0.3) return v();
  if (r < 0.6) return { [pick(rng, COMPARISONS)]: v() };
  if (r < 0.75) return { $in: [v(), v(), rng() < 0.2 ? String(v()) : v()] };
  if (r < 0.85) return { $ne: v() };
  if (r < 0.92) return { $gte: v(), $lt: v() };
  return { $exists: rng() < 0.8 };
}

/** A whole `where`: 1-3 keys, with $and/$or/$nor and entry fields now and then. */
/** `likes: false` for an aggregate's `$match`, whose operators (mingo's) have no `$like`/`$iLike`. */
export function where(rng: Rng, bounds: { maxId: number; times: string[] }, depth = 0, likes = true): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keys = int(rng, 1, depth === 0 ? 3 : 2);
  for (let i = 0; i < keys; i++) {
    const r = rng();
    if (r < 0.15 && depth < 2) out[pick(rng, ['$and', '$or', '$nor'])] = Array.from({ length: int(rng, 1, 3) }, () => where(rng, bounds, depth + 1, likes));
    else if (r < 0.27 && depth === 0) {
      const field = pick(rng, ENTRY_FIELDS);
      out[field] = entryFieldCondition(rng, field, bounds);
    } else out[pick(rng, PATHS)] = condition(rng, 0, likes);
  }
  return out;
}

const ORDERS: readonly unknown[] = [
  undefined,
  [['id', 'ASC']],
  [['id', 'DESC']],
  [['order', 'DESC']],
  [
    ['order', 'ASC'],
    ['createdAt', 'DESC'],
  ],
  [
    ['createdAt', 'DESC'],
    ['id', 'ASC'],
  ],
  [['updatedAt', 'ASC']],
  [
    ['updatedAt', 'DESC'],
    ['order', 'DESC'],
  ],
  [['data.n', 'ASC']],
  [['k', 'ASC']],
  [['k', 'DESC']],
  [
    ['data.k', 'DESC'],
    ['id', 'ASC'],
  ],
  [
    ['b', 'ASC'],
    ['k', 'DESC'],
  ],
  [['d', 'ASC']],
  [['s', 'DESC']],
  [['obj.x', 'ASC']],
  [['deep.a.b', 'DESC']],
];

/** A select body: where, order, limit/offset, includePagination. */
export function queryBody(rng: Rng, bounds: { maxId: number; times: string[] }): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (rng() < 0.92) body.where = where(rng, bounds);
  const order = pick(rng, ORDERS);
  if (order) body.order = order;
  if (rng() < 0.6) body.limit = int(rng, 1, 25);
  if (rng() < 0.35) body.offset = int(rng, 0, 40);
  if (rng() < 0.5) body.includePagination = true;
  return body;
}

/** The paths sql-differential.test.ts declares indexes on. */
export const INDEXED_PATHS = ['n', 's', 'b', 'd', 'k', 'obj.x', 'deep.a.b', 'mixed', 'tags'] as const;

/** A test on an indexed path that has an index form (keys.ts): equality, `$in`, a comparison, null; 'true'/'false' and booleans often. */
function indexedCondition(rng: Rng): unknown {
  const operandOf = () => (rng() < 0.25 ? pick(rng, [true, false, 'true', 'false', null]) : pick(rng, SCALARS));
  const r = rng();
  if (r < 0.3) return operandOf();
  if (r < 0.5) return { $in: Array.from({ length: int(rng, 1, 3) }, operandOf) };
  if (r < 0.85) {
    const bound = () => (rng() < 0.5 ? pick(rng, NUMBERS) : pick(rng, [...STRINGS, 'f', 'g', 'tru', 'truf', 'fals', 'falsf', 'u']));
    return rng() < 0.7 ? { [pick(rng, COMPARISONS)]: bound() } : { $gte: bound(), $lt: bound() };
  }
  return { $eq: operandOf() };
}

/**
 * A select whose plan has a choice of index (sql/walk.ts, sql/select.ts): tests on indexed paths (one path
 * alone, whose count is then index-only, or two, under `$or` now and then), ordered by `createdAt` either way
 * (sometimes with more keys) or by the default order, often with `includePagination`.
 */
export function indexedQueryBody(rng: Rng, bounds: { maxId: number; times: string[] }): Record<string, unknown> {
  const path = pick(rng, INDEXED_PATHS);
  const r = rng();
  let where: Record<string, unknown>;
  if (r < 0.5) where = { [path]: indexedCondition(rng) };
  else if (r < 0.65) where = { $or: [{ [path]: indexedCondition(rng) }, { [path]: indexedCondition(rng) }] };
  else if (r < 0.8) where = { [path]: indexedCondition(rng), [pick(rng, INDEXED_PATHS)]: indexedCondition(rng) };
  else if (r < 0.9) where = { [path]: indexedCondition(rng), [pick(rng, PATHS)]: condition(rng) };
  else where = { [path]: indexedCondition(rng), $createdAt: { $lte: pick(rng, bounds.times) } };
  const body: Record<string, unknown> = { where };
  const o = rng();
  if (o < 0.4) body.order = [['createdAt', 'DESC']];
  else if (o < 0.7) body.order = [['createdAt', 'ASC']];
  else if (o < 0.8)
    body.order = [
      ['createdAt', pick(rng, ['ASC', 'DESC'])],
      [pick(rng, ['id', 'order', 'k', 'n']), pick(rng, ['ASC', 'DESC'])],
    ];
  if (rng() < 0.9) body.limit = int(rng, 1, 25);
  if (rng() < 0.3) body.offset = int(rng, 0, 60);
  if (rng() < 0.6) body.includePagination = true;
  return body;
}

/**
 * Attributes of generated distinct selects: mostly data paths of few values (rows repeat) with mixed types
 * (`b`: booleans, 0, 1, 'true', null, missing), entry fields, paths through objects and arrays; now and then what
 * the translation refuses or flags (`data` whole, `id`, objects and arrays, `tags.0`, literal dotted keys).
 */
const DISTINCT_ATTRIBUTES = [
  'b',
  'order',
  'nope',
  'data.b',
  'createdAt',
  'deep.a.b',
  'updatedAt',
  'k',
  'dataSourceId',
  'b',
  'd',
  'nope.x',
  'obj.x',
  'mixed.x',
  'deletedAt',
  'n',
  'data.d',
  'obj.y.z',
  's',
  'obj',
  'tags',
  'id',
  'data',
  'tags.0',
] as const;

/** A distinct select (queryBody's where, order, limit/offset, pagination) with 0-3 attributes, rarely none. */
export function distinctQueryBody(rng: Rng, bounds: { maxId: number; times: string[] }): Record<string, unknown> {
  const body = queryBody(rng, bounds);
  // Often no where: more matches, so more rows repeat.
  if (rng() < 0.4) delete body.where;
  body.distinct = true;
  // Few distinct rows: a short offset, or the page is mostly empty.
  if (body.offset !== undefined) body.offset = int(rng, 0, 6);
  if (rng() < 0.04) return body;
  const count = rng() < 0.05 ? 0 : int(rng, 1, 3);
  // The common attributes first: the refused or flagged ones at the end of the list come up less often.
  body.attributes = Array.from({ length: count }, () => DISTINCT_ATTRIBUTES[Math.floor(rng() ** 2 * DISTINCT_ATTRIBUTES.length)]!);
  return body;
}

/**
 * Entries that attributes read differently from paths: literal dotted keys (read instead of the nested path),
 * and equal objects whose keys come in another order (equal rows for distinct).
 */
export const DISTINCT_EXTRA_ENTRIES: readonly Record<string, unknown>[] = [
  { 'obj.x': 1, obj: { x: 2 }, b: true },
  { 'deep.a.b': 'z', deep: { a: { b: 'z' } }, b: false },
  { obj: { x: { a: 1, b: 2 } }, b: 1 },
  { obj: { x: { b: 2, a: 1 } }, b: 1 },
  { obj: { x: [1, 2] }, mixed: { x: 1 } },
  { obj: { x: 1.0 }, mixed: { x: '1' }, b: 'true' },
  { obj: { x: 1e21 }, mixed: { x: null }, b: null },
];
