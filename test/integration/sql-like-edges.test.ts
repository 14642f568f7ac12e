import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { compileQuery } from '../../src/server/data-sources/query/compile.js';
import { runQuery } from '../../src/server/data-sources/query/run.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import { planSqlSelect, runSqlSelect } from '../../src/server/data-sources/sql/select.js';
import { testEngine, type TestBackend } from '../helpers/server.js';
import { startSqlBackend } from '../helpers/sql-backend.js';

/**
 * `$like`/`$iLike` translated to SQL (docs/sql.md) on the edge cases an independent review found or tried: GLOB
 * ending a string at a NUL, GLOB reading U+FFFE/U+FFFF/lone surrogates as U+FFFD, GLOB's own wildcards, case
 * folding of non-ASCII letters, strings that look like JSON. Every translated pattern (and its `$not`) against every
 * value, alone and in an array, must give like.ts's answer (runQuery).
 */
let b: TestBackend;
let db: Database;
let dsId: number;
let entries: EntryRecord[];
const cleanup: (() => unknown)[] = [];
const VALUES = [
  'x\uFFFE',
  'x\uFFFF',
  'x\uFFFD',
  'a\ud800b',
  'ab\u0000cd',
  'ab\u0000',
  'abc',
  'ABC',
  'a[b',
  'a*b',
  'a?b',
  'a]b',
  'a\\b',
  'x😀y',
  'é',
  'É',
  'ſ',
  'ı',
  'K',
  '\u212a',
  'straße',
  'STRASSE',
  'ǅ',
  'ǆ',
  'Ǆ',
  '{"a":1}',
  '[1]',
  'null',
  'true',
  '',
  ' ',
  'a\nb',
  'ﬀ',
  'ß',
  'ẞ',
  'İ',
  'i̇',
];
const PATTERNS = [
  '%x\uFFFF',
  '%x\uFFFD',
  'a\uFFFD%',
  '%\uFFFE',
  '%cd',
  'a%b',
  'ab%',
  '%b',
  'cd',
  'a[b',
  'a[%',
  '%]b',
  'a\\%',
  '%\\b',
  'x%y',
  '%s%',
  '%S%',
  'k',
  '%K',
  'ss%',
  '%SS%',
  '%ab%',
  '[%',
  '%*%',
  '%?%',
  'a_b',
  '%a%',
  'A%',
  '%ǆ%',
  'ǅ',
  'st%',
  '%ff%',
  'FF',
  '%I%',
  'i',
  '%{%',
  '%"a"%',
  'nul%',
  '%rue',
  '%\n%',
  ' ',
  '% %',
];
beforeAll(async () => {
  ({ b, db } = await startSqlBackend('iar_like_edges', cleanup));
  const ds = await b.client.DataSources.create({ name: 'Like' });
  dsId = ds.id;
  const conn = await b.client.DataSources.connect(ds.id);
  const vals = testEngine === 'postgres' ? VALUES.filter((v) => !/[\u0000\ud800-\udfff]/.test(v)) : VALUES;
  await conn.import(vals.flatMap((s) => [{ s }, { s: [s, 5] }]));
  const rows = await db.all<{ id: number; data: string; sort_order: number; created_at: string; updated_at: string }>(
    'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id',
    [dsId],
  );
  entries = rows.map((r) => ({
    id: r.id,
    dataSourceId: dsId,
    data: typeof r.data === 'string' ? JSON.parse(r.data) : r.data,
    order: r.sort_order,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
}, 60000);
afterAll(async () => {
  await db?.close();
  await b?.close();
  for (const f of cleanup.reverse()) await f();
});
it('translated patterns answer as like.ts does on edge-case strings', async () => {
  const diffs: unknown[] = [];
  let translated = 0;
  for (const op of ['$like', '$iLike'])
    for (const p of PATTERNS)
      for (const neg of [false, true]) {
        const body = { where: neg ? { s: { $not: { [op]: p } } } : { s: { [op]: p } }, limit: 1000 };
        const compiled = compileQuery(body);
        const plan = planSqlSelect(compiled);
        if (!plan) continue;
        translated++;
        const got = await runSqlSelect(db, testEngine, dsId, plan);
        const want = await runQuery(entries, compiled.body, { load: async () => [] });
        const g = got?.entries.map((e) => JSON.stringify(e.data)).sort();
        const w = (want.entries as EntryRecord[]).map((e) => JSON.stringify(e.data)).sort();
        if (JSON.stringify(g) !== JSON.stringify(w))
          diffs.push({ op, p, neg, sqlOnly: g?.filter((x) => !w.includes(x)), jsOnly: w.filter((x) => !g?.includes(x)) });
      }
  expect(diffs).toEqual([]);
  expect(translated).toBeGreaterThan(40); // most of the patterns translate: the test is not passing by declining
}, 60000);
