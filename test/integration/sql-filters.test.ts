import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import { compileWhere } from '../../src/server/data-sources/engine.js';
import { DEFAULT_AGGREGATE_LIMITS } from '../../src/server/data-sources/query/aggregate.js';
import { runSqlAggregate } from '../../src/server/data-sources/sql/aggregate.js';
import { planSqlAggregate } from '../../src/server/data-sources/sql/aggregate-plan.js';
import { planSqlSelect, runSqlSelect } from '../../src/server/data-sources/sql/select.js';
import { deleteTranslates } from '../../src/server/data-sources/sql-delete.js';
import { testEngine, type TestBackend } from '../helpers/server.js';
import { startSqlBackend, storedEntries } from '../helpers/sql-backend.js';

/**
 * `where.$filters` translated to SQL (sql/filters.ts, docs/sql.md "`$filters`") on edge cases: letters JS lowercases
 * oddly (K, İ, ß, ẞ, ſ, Σ, ǅ), NUL, lone surrogates and U+FFFF (SQLite; PostgreSQL refuses them in jsonb), JSON-looking
 * text, objects whose JSON text holds quotes and escapes, numbers written with exponents, empty values, a top-level
 * key with a dot beside the nested one, arrays on the way. Every operand that translates, on every column, must give
 * filters.ts's answer (runQuery); operands whose case folding or numeric reading SQL cannot reproduce must not
 * translate.
 */
let b: TestBackend;
let db: Database;
let dsId: number;
let entries: EntryRecord[];
const cleanup: (() => unknown)[] = [];

const ODD = [
  '\u212a',
  'K',
  'k',
  '\u0130',
  'i\u0307',
  'I',
  'i',
  'ı',
  'ß',
  'ẞ',
  'SS',
  'ſ',
  'S',
  'Σ',
  'σ',
  'ς',
  'ǅ',
  'ǆ',
  'Ǆ',
  'é',
  'É',
  'ﬀ',
  'FF',
  '\u2126',
  'ω',
  '𐐀',
  '𐐨',
];
const VALUES: unknown[] = [
  ...ODD,
  ...ODD.map((c) => `x${c}y`),
  'ab\u0000cd',
  'a\ud800b',
  'a\ud800É',
  'a\u0000É',
  'ÉİK',
  'Éİx',
  'ΟΔΟΣ',
  'xİ\u0307y',
  'x\uFFFF',
  'x\uFFFD',
  '{"a":1}',
  '[1]',
  '{',
  'null',
  'true',
  'TRUE',
  'False',
  '',
  ' ',
  'a"b',
  'a\\b',
  'a\nb',
  '😀',
  'x😀y',
  '名前',
  '05',
  ' 7 ',
  '1e3',
  '1E3',
  '-0',
  '2024-01-05',
  '2024-01-05 09:30',
  // Strings numericValue reads as numbers, and some it does not.
  '.5',
  '5.',
  '+5',
  '-.5e1',
  '1.50',
  '007',
  '1e+3',
  '\t5\n',
  '5e-324',
  '5 x',
  '0x10',
  'Infinity',
  '1e',
  '.',
  30,
  0.1,
  2 ** 53,
  2 ** 53 + 2,
  1.7976931348623157e308,
  0,
  5,
  -1.5,
  1e21,
  1.5e-7,
  5e-324,
  true,
  false,
  null,
  [],
  [null],
  [[]],
  [['k']],
  { 'a"b': 'x\ny', K: 'K' },
  { x: { y: [1e21, 'İ'] } },
  {},
];
const OPERANDS: unknown[] = [
  'k',
  'K',
  '\u212a',
  'i',
  'I',
  '\u0130',
  'i\u0307',
  'ss',
  'ß',
  's',
  'σ',
  'é',
  // Caseful operands (only JS's full toLowerCase folds them): SQLite folds with it, PostgreSQL matches their preimages.
  'É',
  'xéy',
  'ÉİK',
  'ǅ',
  'ǆ',
  'ı',
  '\u0307',
  'xi\u0307',
  'i\u0307y',
  '\u0307y',
  'ki',
  'éi',
  'éi\u0307',
  'ẞ',
  'ﬀ',
  '\u2126',
  'ω',
  '𐐨',
  'x',
  'xky',
  'xiy',
  'true',
  'rue',
  'TRUE',
  'false',
  'null',
  '',
  ' ',
  '{',
  '[',
  '"',
  'a"b',
  '\\',
  '\\n',
  ':',
  'e+',
  'e-',
  '+21',
  '.',
  '-',
  '-1',
  '7e',
  '99',
  '😀',
  '名',
  '2024-01-05',
  '05',
  '5',
  '1e3',
  'ab',
  'cd',
  true,
  false,
  null,
  5,
  // Numeric operands: numbers, and strings numericValue reads as numbers.
  0,
  -0,
  30,
  -1.5,
  1e21,
  1.5e-7,
  0.1,
  2 ** 53,
  '5.0',
  ' 7 ',
  '.5',
  '-0',
  '+5',
  '1e-400',
  '1E400',
];
/** Strings past the double range: PostgreSQL's `float8` refuses them (the JS evaluator answers; tested over HTTP below). */
const OUT_OF_RANGE = ['1e400', '-1e400', '1e-400', '0.1e-330'];
const CONDITIONS = ['==', '!=', 'contains', 'notcontains', '>', '>=', '<', '<='];

beforeAll(async () => {
  // The entry cache off: query deletes whose `where` translates run in SQL (sql-delete.ts).
  ({ b, db } = await startSqlBackend('iar_filter_edges', cleanup, { limits: { entryCacheEntries: 0 } }));
  const ds = await b.client.DataSources.create({ name: 'Filters' });
  dsId = ds.id;
  const conn = await b.client.DataSources.connect(ds.id);
  // jsonb refuses `\u0000` and lone surrogates (JSON.stringify writes both as escapes).
  const unsafe = (v: unknown) => /\\u0000|\\ud[89a-f]/.test(JSON.stringify(v));
  const values = testEngine === 'postgres' ? VALUES.filter((v) => !unsafe(v)) : [...VALUES, ...OUT_OF_RANGE];
  // The value alone, in an array, nested (a.b), behind an array (filters.ts reads nothing there), and as the
  // top-level key `a.b` (which wins over the nested one).
  await conn.import(values.flatMap((v) => [{ v }, { v: [v, 5] }, { a: { b: v } }, { a: [{ b: v }] }, { 'a.b': v, a: { b: 'zzz' } }]));
  entries = await storedEntries(db, dsId);
}, 60000);

afterAll(async () => {
  await db?.close();
  await b?.close();
  for (const f of cleanup.reverse()) await f();
});

async function differences(filters: Record<string, unknown>[]): Promise<{ translated: number; diffs: unknown[] }> {
  const diffs: unknown[] = [];
  let translated = 0;
  for (const filter of filters) {
    const body = { where: { $filters: [filter] }, limit: 10_000 };
    const compiled = compileQuery(body);
    const plan = planSqlSelect(compiled);
    if (!plan) continue;
    translated++;
    const got = (await runSqlSelect(db, testEngine, dsId, plan))?.entries.map((e) => e.id);
    const want = ((await runQuery(entries, compiled.body, { load: async () => [] })).entries as EntryRecord[]).map((e) => e.id);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      const data = (ids: number[] | undefined, other: number[] | undefined) =>
        entries.filter((e) => ids?.includes(e.id) && !other?.includes(e.id)).map((e) => e.data);
      diffs.push({ filter, sqlOnly: data(got, want), jsOnly: data(want, got) });
    }
  }
  return { translated, diffs };
}

it('translated filters answer as filters.ts does on edge-case values', async () => {
  const filters: Record<string, unknown>[] = [];
  for (const column of ['v', 'a.b', 'data.v', 'a'])
    for (const condition of CONDITIONS)
      for (const value of OPERANDS) if (value !== null || !condition.includes('contains')) filters.push({ column, condition, value });
  for (const column of ['v', 'a.b']) {
    filters.push({ column, condition: 'empty' }, { column, condition: 'notempty' });
    filters.push({ column, condition: 'oneof', value: ['k', null, true] }, { column, condition: 'oneof', value: 'xky, ss ,TRUE' });
    filters.push({ column, condition: 'oneof', value: ['É', 'k', null, 'ǆ'] }, { column, condition: 'oneof', value: 'é, İ ,x, 5' });
    filters.push({ column, condition: 'between', value: { from: 'a', to: 'x' } }, { column, condition: 'between', value: { from: '', to: '{' } });
    filters.push({ column, condition: 'between', value: { from: true, to: null } }, { column, condition: 'between', value: { to: '2024-01-06' } });
    filters.push({ column, condition: 'oneof', value: [5, 'k', '1e3', null] }, { column, condition: 'oneof', value: '5, 7 ,x, 0.1' });
    filters.push({ column, condition: 'between', value: { from: 1, to: 10 } }, { column, condition: 'between', value: { from: '05', to: 'x' } });
    filters.push({ column, condition: 'between', value: { from: -1, to: null } }, { column, condition: 'between', value: { from: 0.1, to: '1e3' } });
  }
  const { translated, diffs } = await differences(filters);
  expect(diffs).toEqual([]);
  // Most of them translate: the test does not pass by declining.
  expect(translated).toBeGreaterThan(filters.length * 0.5);
}, 120_000);

/** Filters of every translated condition, for the other statements that take a `where`. */
const SAMPLE = [
  { column: 'v', condition: 'contains', value: 'k' },
  { column: 'a.b', condition: 'notcontains', value: 'x' },
  { column: 'v', condition: '==', value: 'ss' },
  { column: 'a.b', condition: '!=', value: true },
  { column: 'v', condition: 'oneof', value: ['名前', null, 'true', 'ss'] },
  { column: 'v', condition: 'empty' },
  { column: 'a', condition: 'notempty' },
  { column: 'v', condition: '>', value: 'x' },
  { column: 'a.b', condition: '<=', value: '2024-01-05' },
  { column: 'v', condition: 'between', value: { from: '{', to: 'zz' } },
  { column: 'v', condition: '>=', value: 5 },
  { column: 'a.b', condition: '<', value: '1e3' },
  { column: 'v', condition: '==', value: '05' },
  { column: 'v', condition: 'oneof', value: [0, 'k', 30] },
  { column: 'a.b', condition: 'between', value: { from: -1, to: '2024' } },
  { column: 'v', condition: 'contains', value: 'É' },
  { column: 'a.b', condition: 'oneof', value: ['ǆ', 'k', 'İ'] },
];

it('selects with translated filters over HTTP answer as runQuery does', async () => {
  for (const filter of SAMPLE) {
    const body = { where: { $filters: [filter] }, order: [['id', 'DESC']], limit: 50, includePagination: true };
    expect({ filter, sql: planSqlSelect(compileQuery(body)) !== null }).toEqual({ filter, sql: true });
    const res = await b.api('POST', `/v1/data-sources/${dsId}/data/query`, { json: body });
    const want = await runQuery(entries, compileQuery(body).body, { load: async () => [] });
    expect({ filter, status: res.status, answer: res.body }).toEqual({ filter, status: 200, answer: JSON.parse(JSON.stringify(want)) });
  }
});

it('aggregations with translated filters answer as mingo does', async () => {
  for (const filter of SAMPLE) {
    const body = { where: { $filters: [filter] }, aggregate: [{ $group: { _id: null, n: { $sum: 1 } } }] };
    const compiled = compileQuery(body);
    const plan = planSqlAggregate(compiled);
    expect({ filter, planned: plan !== null }).toEqual({ filter, planned: true });
    const got = await runSqlAggregate(db, testEngine, dsId, plan!, DEFAULT_AGGREGATE_LIMITS);
    const want = await runQuery(entries, compiled.body, { load: async () => [] });
    expect({ filter, got }).toEqual({ filter, got: want.entries });
  }
});

it('query deletes with translated filters run in SQL and delete what the JS matcher matches', async () => {
  const list = async (ds: number): Promise<EntryRecord[]> => {
    const res = await b.api('GET', `/v1/data-sources/${ds}/data`);
    expect(res.status).toBe(200);
    return res.body.entries as EntryRecord[];
  };
  const ds = (await b.client.DataSources.create({ name: 'FilterDeletes' })).id;
  const conn = await b.client.DataSources.connect(ds);
  const data = entries.map((e) => e.data);
  let deleted = 0;
  for (const filter of SAMPLE) {
    await conn.import(data);
    const before = await list(ds);
    const where = { $filters: [filter] };
    expect({ filter, sql: deleteTranslates(where) }).toEqual({ filter, sql: true });
    const test = compileWhere(where);
    const left = before.filter((e) => !test(e)).map((e) => e.id);
    const res = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: { type: 'delete', where } });
    expect({ filter, answer: res.body, left: (await list(ds)).map((e) => e.id) }).toEqual({
      filter,
      answer: { deletedCount: before.length - left.length },
      left,
    });
    deleted += before.length - left.length;
  }
  expect(deleted).toBeGreaterThan(SAMPLE.length * 10);
}, 120_000);

it('leaves to the JS evaluator the operands SQL would fold or read as numbers differently', () => {
  const planned = (condition: string, value: unknown) => planSqlSelect(compileQuery({ where: { $filters: [{ column: 'v', condition, value }] } })) !== null;
  // Final_Sigma (Σ lowercases by its neighbours), U+FFFD (SQLite reads invalid UTF-8 as it), and JSON-looking texts.
  for (const value of ['σ', 'ς', 'xσ', 'Σ', 'é\uFFFD', '{"a":1}', '[1]']) {
    expect({ value, planned: planned('==', value) }).toEqual({ value, planned: false });
    expect({ value, planned: planned('oneof', ['x', value]) }).toEqual({ value, planned: false });
  }
  for (const value of ['σ', 'ΟΔΟΣ', 'é\uFFFD', 'é'.repeat(257)])
    expect({ value: value.slice(0, 9), planned: planned('contains', value) }).toEqual({ value: value.slice(0, 9), planned: false });
  expect(planned('contains', 'é'.repeat(256))).toBe(true);
  // Caseful operands translate (JS's full toLowerCase: SQLite calls it, PostgreSQL matches the case preimages).
  for (const value of ['é', 'ß', '\u0130', 'i\u0307', 'ǅ', 'Straße', '𐐀'])
    for (const condition of ['==', '!=', 'contains', 'notcontains'])
      expect({ value, condition, planned: planned(condition, value) }).toEqual({ value, condition, planned: true });
  // A needle made of a number's characters: numbers are tested by their text, String(n) (stored as JSON.stringify wrote it).
  for (const value of ['5', '1e', '.', '-', 'E', 5, -1.5, 1e21]) expect({ value, planned: planned('contains', value) }).toEqual({ value, planned: true });
  for (const value of ['\uFFFF', '😀']) expect({ value, planned: planned('>', value) }).toEqual({ value, planned: false });
  // Numeric operands translate: numeric elements are compared as numbers (a string's as numericValue reads it).
  for (const value of [5, '05', ' 7 ', '1e3', '-0', 1.5e-7]) {
    for (const condition of ['==', '!=', '>', '>=', '<', '<='])
      expect({ value, condition, planned: planned(condition, value) }).toEqual({ value, condition, planned: true });
    expect({ value, planned: planned('oneof', ['x', value]) }).toEqual({ value, planned: true });
    expect({ value, planned: planned('between', { from: value, to: 'x' }) }).toEqual({ value, planned: true });
  }
  // Date conditions translate (a bad operand is refused by compileQuery first).
  for (const condition of ['dateis', 'datebefore', 'dateafter']) expect(planned(condition, '2024-01-05')).toBe(true);
  // An operand past Date's range (its NaN compares as equal) is left to the JS evaluator.
  expect(planSqlSelect(compileQuery({ where: { $filters: [{ column: 'v', condition: 'dateis', value: 9e15, unit: 'day' }] } }))).toBeNull();
  expect(planSqlSelect(compileQuery({ where: { $filters: [{ column: 'v', condition: 'dateis', value: 9e15 }] } }))).not.toBeNull();
  // An epoch operand whose target is no safe integer (PostgreSQL compares with a bigint; found by review).
  expect(planSqlSelect(compileQuery({ where: { $filters: [{ column: 'v', condition: 'dateis', value: 1e300 }] } }))).toBeNull();
  // Caseless non-ASCII text translates, and so does U+212A, whose lowercase is k (as JS compares it).
  expect(planned('==', '\u212a')).toBe(true);
  expect(planned('==', '名前')).toBe(true);
  expect(planned('contains', '😀')).toBe(true);
});

it('numeric filters answer right over strings past the double range (PostgreSQL: by the JS evaluator)', async () => {
  const ds = (await b.client.DataSources.create({ name: 'OutOfRange' })).id;
  const conn = await b.client.DataSources.connect(ds);
  await conn.import([...OUT_OF_RANGE, 0, 5, '5', 'x', 1e300, [1, '1e400']].flatMap((v) => [{ v }, { a: { b: v } }]));
  const stored = await storedEntries(db, ds);
  for (const filter of [
    { column: 'v', condition: '>', value: 1 },
    { column: 'v', condition: '==', value: 0 },
    { column: 'a.b', condition: 'between', value: { from: -1, to: '1e3' } },
    { column: 'v', condition: 'oneof', value: ['5', 0] },
  ]) {
    const body = { where: { $filters: [filter] }, order: [['id', 'ASC']], limit: 100 };
    const res = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: body });
    const want = await runQuery(stored, compileQuery(body).body, { load: async () => [] });
    expect({ filter, status: res.status, answer: res.body }).toEqual({ filter, status: 200, answer: JSON.parse(JSON.stringify(want)) });
    const counted = await b.api('POST', `/v1/data-sources/${ds}/data/query`, {
      json: { where: body.where, aggregate: [{ $group: { _id: null, n: { $sum: 1 } } }] },
    });
    expect({ filter, status: counted.status, answer: counted.body.entries }).toEqual({
      filter,
      status: 200,
      answer: want.entries.length ? [{ _id: null, n: want.entries.length }] : [],
    });
  }
});

/** Values dates.ts reads as dates, and some it does not. */
const DATE_VALUES: unknown[] = [
  '2024-01-05',
  ' 2024-01-05 ',
  '\u00a02024-01-05\u3000',
  '2024-01-05T09:30:15.123456789+05:30',
  '2024-01-05t09:30 z',
  '2024-01-05 09:30:59.57Z',
  '2024-01-05 09:30:00.29',
  '2024-01-05 23:59-01:00',
  '2024-01-06 00:10+00:99',
  '2024-01-04 22:00-0230',
  '2024-02-29',
  '2023-02-29',
  '1900-02-29',
  '0000-02-29',
  '0004-02-29',
  '0024-03-01 12:00',
  '9999-12-31 23:59:59.999',
  '2024-13-01',
  '2024-01-05 24:00',
  '2024-01-05 09:60',
  '09:30',
  '9:30:15',
  '23:59:59',
  '24:00',
  '7:5',
  1704447000000,
  1704447000000 + 86_399_999,
  0,
  -1,
  -86_400_001,
  -62_135_596_800_000,
  -8_640_000_000_000_000,
  8_640_000_000_000_000,
  8_640_000_000_000_001,
  2 ** 53,
  'x',
  true,
  null,
  ['2024-01-05'],
  { d: '2024-01-05' },
];
/** Epoch numbers PostgreSQL leaves to the JS evaluator for a time of day (fractions, past 2^63), read right for the rest. */
const ODD_EPOCHS: unknown[] = [1704447000000.5, -0.5, 1e21, 1.7976931348623157e308];
const DATE_OPERANDS = [
  '2024-01-05',
  '2024-01-05 09:30',
  '2024-01-05 09:30:15',
  '2024-01-05T04:00:15.5+05:30',
  '0024-03-01',
  '1970-01-01',
  '09:30',
  '09:30:15',
  1704447000000,
  -1,
];

it('date conditions answer as filters.ts does (dates.ts read by SQL)', async () => {
  const ds = (await b.client.DataSources.create({ name: 'Dates' })).id;
  const conn = await b.client.DataSources.connect(ds);
  await conn.import(DATE_VALUES.flatMap((v) => [{ v }, { a: { b: v } }]));
  const stored = await storedEntries(db, ds);
  const filters: Record<string, unknown>[] = [];
  for (const column of ['v', 'a.b'])
    for (const value of DATE_OPERANDS) {
      const time = typeof value === 'string' && /^\d{1,2}:/.test(value);
      const units = time ? [undefined, 'hour', 'minute', 'second'] : [undefined, 'year', 'month', 'day', 'hour', 'minute', 'second'];
      for (const unit of units)
        for (const condition of ['dateis', 'datebefore', 'dateafter']) filters.push({ column, condition, value, ...(unit ? { unit } : {}) });
    }
  for (const [from, to] of [
    ['2024-01-01', '2024-01-05 09:30'],
    ['0004-01-01', undefined],
    [undefined, '1970-01-01'],
    ['08:00', '10:00'],
  ])
    filters.push({ column: 'v', condition: 'datebetween', value: { ...(from ? { from: { value: from } } : {}), ...(to ? { to: { value: to } } : {}) } });
  filters.push({ column: 'v', condition: 'datebetween', from: { value: '2024-01-05' }, to: { value: '2024-01-06' }, unit: 'day' });
  let matched = 0;
  for (const filter of filters) {
    const body = { where: { $filters: [filter] }, limit: 10_000 };
    const compiled = compileQuery(body);
    const plan = planSqlSelect(compiled);
    expect({ filter, planned: plan !== null }).toEqual({ filter, planned: true });
    const got = (await runSqlSelect(db, testEngine, ds, plan!))?.entries.map((e) => e.id);
    const want = ((await runQuery(stored, compiled.body, { load: async () => [] })).entries as EntryRecord[]).map((e) => e.id);
    // The values the two disagree on, to read in a failure.
    const differ = stored.filter((e) => got?.includes(e.id) !== want.includes(e.id)).map((e) => e.data);
    expect({ filter, differ }).toEqual({ filter, differ: [] });
    expect({ filter, ids: got }).toEqual({ filter, ids: want });
    matched += want.length;
  }
  expect(matched).toBeGreaterThan(filters.length);

  // Fractions and numbers past 2^63: over HTTP (PostgreSQL refuses a time of day on them, and the JS evaluator answers).
  await conn.import(ODD_EPOCHS.map((v) => ({ v })));
  const all = await storedEntries(db, ds);
  for (const filter of [
    { column: 'v', condition: 'dateis', value: '09:30' },
    { column: 'v', condition: 'dateafter', value: '1970-01-01', unit: 'second' },
    { column: 'v', condition: 'dateis', value: '2024-01-05', unit: 'day' },
    { column: 'v', condition: 'datebefore', value: '1970-01-01 00:00:01' },
  ]) {
    const body = { where: { $filters: [filter] }, order: [['id', 'ASC']], limit: 1000 };
    const res = await b.api('POST', `/v1/data-sources/${ds}/data/query`, { json: body });
    const want = await runQuery(all, compileQuery(body).body, { load: async () => [] });
    expect({ filter, status: res.status, answer: res.body }).toEqual({ filter, status: 200, answer: JSON.parse(JSON.stringify(want)) });
  }
}, 120_000);

it('the case folding the translation relies on holds for every code point', () => {
  // filters.ts lets into a case-insensitive operand only ASCII and caseless characters (toLowerCase and toUpperCase
  // keep them, not U+0307). That is exact when no other character lowercases to one of them except U+212A (k) and
  // U+0130 (i + U+0307), which the dialects replace before their ASCII lower().
  const caseless = (c: string) => c.toLowerCase() === c && c.toUpperCase() === c && c !== '\u0307';
  const odd: string[] = [];
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    const lower = c.toLowerCase();
    if (lower === c) continue;
    for (const out of lower) if (out.charCodeAt(0) < 0x80 || caseless(out)) odd.push(`${cp.toString(16)}:${out}`);
  }
  expect(odd).toEqual(['130:i', '212a:k']);
});
