import { expect, it } from 'vitest';
import { likeMatcher } from '../../src/filter/like.js';
import { compileRegex } from '../../src/filter/regex.js';
import { compileWhere } from '../../src/server/data-sources/query/index.js';
import { whereOptions } from '../../src/server/data-sources/query/where.js';
import { startTestBackend } from '../helpers/server.js';

/**
 * Issue 14, linear-time matching: RE2 (re2js) and the LIKE matcher against native RegExp on the same texts in
 * the same run, and each hostile request of the issue beside a plain one over HTTP.
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
function time(fn: () => void, runs = 7): number {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    out.push(performance.now() - t);
  }
  return median(out);
}
const fmt = (n: number) => n.toFixed(n < 10 ? 2 : 0);

it('pattern matching: RE2 and LIKE against native RegExp', () => {
  const texts = Array.from({ length: 100_000 }, (_, i) => (i % 3 ? `user${i}@example.com` : `Call 555-${String(i).padStart(4, '0')} now`));
  const rows: string[] = ['| pattern | native RegExp (ms / 100k) | ours (ms / 100k) | ratio |', '| --- | --- | --- | --- |'];
  const cases: [string, string][] = [
    ['example', ''],
    ['^[a-z]+\\d*@example\\.com$', ''],
    ['\\d{3}-\\d{4}', ''],
    ['CALL', 'i'],
  ];
  for (const [pattern, flags] of cases) {
    const native = new RegExp(pattern, flags);
    const ours = compileRegex(pattern, flags, 'bench');
    let a = 0;
    let b = 0;
    const tn = time(() => texts.forEach((t) => (a += native.test(t) ? 1 : 0)));
    const to = time(() => texts.forEach((t) => (b += ours.test(t) ? 1 : 0)));
    expect(a).toBe(b);
    rows.push(`| \`/${pattern}/${flags}\` | ${fmt(tn)} | ${fmt(to)} | ${(to / tn).toFixed(1)} |`);
  }
  const likeNative = /^.*example.*com$/is;
  const like = likeMatcher('%EXAMPLE%com', true);
  const tn = time(() => texts.forEach((t) => likeNative.test(t)));
  const tl = time(() => texts.forEach((t) => like(t)));
  rows.push(`| \`$iLike: '%EXAMPLE%com'\` (baseline: its former regex) | ${fmt(tn)} | ${fmt(tl)} | ${(tl / tn).toFixed(1)} |`);
  console.log(`\n${rows.join('\n')}`);
});

it('hostile patterns: RE2 against a backtracking engine', () => {
  const rows = ['| pattern | text | native RegExp (ms) | RE2 (ms) |', '| --- | --- | --- | --- |'];
  for (const pattern of ['^(a+)+$', '(a|a?)+$']) {
    for (const n of [18, 20, 22, 24]) {
      const text = `${'a'.repeat(n)}!`;
      const native = new RegExp(pattern);
      const ours = compileRegex(pattern, '', 'bench');
      const tn = time(() => native.test(text), 1);
      const to = time(() => ours.test(text));
      rows.push(`| \`${pattern}\` | ${n} × a + ! | ${fmt(tn)} | ${fmt(to)} |`);
    }
    const long = `${'a'.repeat(100_000)}!`;
    rows.push(`| \`${pattern}\` | 100,000 × a + ! | (hours) | ${fmt(time(() => compileRegex(pattern, '', 'bench').test(long), 3))} |`);
  }
  const wild = 'x'.repeat(20_000);
  const tl = time(() => likeMatcher('%%%%%%%%%%%%y', true)(wild));
  rows.push(`| \`$iLike: '%%%%%%%%%%%%y'\` | 20,000 × x | (polynomial) | ${fmt(tl)} |`);
  console.log(`\n${rows.join('\n')}`);
});

it('$in over arrays of scalars: the element-wise fast path against sift alone', () => {
  const entries = Array.from({ length: 300 }, (_, i) => ({
    id: i + 1,
    dataSourceId: 1,
    data: { tags: Array.from({ length: 100 }, (_, j) => `t${i}-${j}`) },
    order: 0,
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:00.000Z',
  }));
  const rows = ['| `where` over 300 entries of 100 tags | sift alone (ms) | fast path (ms) | ratio |', '| --- | --- | --- | --- |'];
  for (const n of [10, 1_000]) {
    const where = { tags: { $in: [...Array.from({ length: n - 1 }, (_, i) => `v${i}`), 't299-99'] } };
    whereOptions.fastPath = false;
    const slow = compileWhere(where);
    let a = 0;
    const ts = time(() => (a = entries.filter(slow).length), 3);
    whereOptions.fastPath = true;
    const fast = compileWhere(where);
    let f = 0;
    const tf = time(() => (f = entries.filter(fast).length));
    expect([a, f]).toEqual([1, 1]);
    rows.push(`| \`$in\` of ${n.toLocaleString('en')} values | ${fmt(ts)} | ${fmt(tf)} | ${(ts / tf).toFixed(0)} |`);
  }
  console.log(`\n${rows.join('\n')}`);
});

it('each hostile request of the issue beside a plain one, over HTTP', async () => {
  const b = await startTestBackend();
  try {
    const x = b.server.bootstrap;
    const ds = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Bench' } })).body.dataSource.id;
    const evil = `${'a'.repeat(26)}!`;
    await b.api('POST', `/v1/data-sources/${ds}/data`, {
      json: { append: true, entries: Array.from({ length: 1000 }, (_, i) => ({ name: i % 10 ? `n${i}` : evil })) },
    });
    const action = await b.client.App.Actions.create({
      name: 'evil',
      environment: 'server',
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: evil } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    for (let i = 0; i < 20; i++) await b.client.App.Actions.runWithResult('evil');
    for (let i = 0; i < 200; i++)
      await b.api('PUT', `/v1/apps/${x.appId}/notifications`, { token: x.studioToken, json: { data: { text: i % 10 ? `t${i}` : evil } } });
    // Stored scopes holding the pattern, matched against the record a caller lists with (targeting).
    for (let i = 0; i < 20; i++)
      await b.api('PUT', `/v1/apps/${x.appId}/notifications`, {
        token: x.studioToken,
        json: { data: { text: `s${i}` }, scope: { team: { $regex: '^(a+)+$' } }, status: 'published' },
      });
    // A log trigger whose `where` runs the pattern over the written columns of a second data source, on every write.
    const trig = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Triggered' } })).body.dataSource.id;
    const watcher = await b.client.App.Actions.create({
      name: 'evil-trigger',
      environment: 'server',
      triggers: [{ trigger: 'log', where: { dataSourceId: trig, data: { columns: { $regex: '(a|a?)+$' } } } }],
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: 'fired' } }],
    });
    await b.client.App.Actions.publish(watcher.id, true);
    // Deep bodies as text (JSON.stringify itself overflows the stack on them).
    const nested = `${'{"$and":['.repeat(2000)}{"name":"n1"}${']}'.repeat(2000)}`;
    const deepEntry = `${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}`;
    /** `$let` multiplying an array, `copies` per level: the 2 KB form is 2 × 30, refused by the nesting limit. */
    const letBomb = (copies: number, levels: number) => {
      let inner: unknown = '$$a';
      for (let i = 0; i < levels; i++) inner = { $let: { vars: { a: { $concatArrays: Array.from({ length: copies }, () => '$$a') } }, in: inner } };
      return [{ $project: { x: { $size: { $let: { vars: { a: [1] }, in: inner } } } } }];
    };
    const q = `/v1/data-sources/${ds}/data/query`;
    const logs = `/v1/apps/${x.appId}/tasks/logs`;
    const notes = `/v1/apps/${x.appId}/notifications`;
    const studio = { token: x.studioToken };
    const paths: [string, () => Promise<unknown>, () => Promise<unknown>, number?][] = [
      [
        'data source `$regex: (a|a?)+$`',
        () => b.api('POST', q, { json: { where: { name: 'n1' } } }),
        () => b.api('POST', q, { json: { where: { name: { $regex: '(a|a?)+$' } } } }),
      ],
      [
        'data source `$iLike: %%%%%%x`',
        () => b.api('POST', q, { json: { where: { name: 'n1' } } }),
        () => b.api('POST', q, { json: { where: { name: { $iLike: '%%%%%%x' } } } }),
      ],
      [
        'aggregate `$regexMatch`',
        () => b.api('POST', q, { json: { aggregate: [{ $count: 'n' }] } }),
        () => b.api('POST', q, { json: { aggregate: [{ $match: { $expr: { $regexMatch: { input: '$data.name', regex: '(a|a?)+$' } } } }, { $count: 'n' }] } }),
      ],
      [
        'getLogs `^(a+)+$`',
        () => b.api('POST', logs, { json: { where: { type: 'app.action.completed' } } }),
        () => b.api('POST', logs, { json: { where: { 'data.result': { $regex: '^(a+)+$' } } } }),
      ],
      [
        'notification where `^(a+)+$`',
        () => b.api('POST', notes, { ...studio, json: { where: { data: { text: 't1' } } } }),
        () => b.api('POST', notes, { ...studio, json: { where: { data: { text: { $regex: '^(a+)+$' } } } } }),
      ],
      [
        'notification scope `^(a+)+$` (20 stored scopes, listed with a record)',
        () => b.api('POST', notes, { json: { scope: { team: 'n1' } } }),
        () => b.api('POST', notes, { json: { scope: { team: evil } } }),
      ],
      [
        'trigger `where` `(a|a?)+$` (an entry written)',
        () => b.api('PUT', `/v1/data-sources/${trig}/data`, { json: { n1: 1 } }),
        () => b.api('PUT', `/v1/data-sources/${trig}/data`, { json: { [evil]: 1 } }),
        201,
      ],
      [
        '`$dateFromString` format `(a+)+x%Y %m %d` (quoted: matched as text)',
        () => b.api('POST', q, { json: { aggregate: [{ $count: 'n' }] } }),
        () =>
          b.api('POST', q, {
            json: { aggregate: [{ $project: { d: { $dateFromString: { dateString: { $literal: `${evil} 2020 01 02` }, format: '(a+)+x%Y %m %d' } } } }] },
          }),
        200,
      ],
      [
        "the issue's 2 KB `$let` bomb, 2 copies × 30 levels (400 NESTING_TOO_DEEP)",
        () => b.api('POST', q, { json: { aggregate: [{ $count: 'n' }] } }),
        () => b.api('POST', q, { json: { aggregate: letBomb(2, 30) } }),
        400,
      ],
      [
        '`$let` bomb, 8 copies × 10 levels (422 AGGREGATE_TOO_LARGE)',
        () => b.api('POST', q, { json: { aggregate: [{ $count: 'n' }] } }),
        () => b.api('POST', q, { json: { aggregate: letBomb(8, 10) } }),
        422,
      ],
      [
        '`$and` 2,000 deep (400 NESTING_TOO_DEEP)',
        () => b.api('POST', q, { json: { where: { name: 'n1' } } }),
        () => b.api('POST', q, { body: `{"where":${nested}}`, headers: { 'Content-Type': 'application/json' } }),
        400,
      ],
      [
        'an entry 6,000 deep (400 NESTING_TOO_DEEP)',
        () => b.api('PUT', `/v1/data-sources/${trig}/data`, { json: { n1: 1 } }),
        () => b.api('PUT', `/v1/data-sources/${trig}/data`, { body: deepEntry, headers: { 'Content-Type': 'application/json' } }),
        400,
      ],
    ];
    const rows = ['| path (26 × a + !) | plain request (ms) | hostile request (ms) | difference (ms) |', '| --- | --- | --- | --- |'];
    for (const [name, plain, hostile, status = 200] of paths) {
      const tp: number[] = [];
      const th: number[] = [];
      for (let i = 0; i < 9; i++) {
        let t = performance.now();
        await plain();
        tp.push(performance.now() - t);
        t = performance.now();
        const r = (await hostile()) as { status: number };
        th.push(performance.now() - t);
        expect(r.status).toBe(status);
      }
      rows.push(`| ${name} | ${fmt(median(tp))} | ${fmt(median(th))} | ${fmt(median(th) - median(tp))} |`);
    }
    console.log(`\n${rows.join('\n')}`);
  } finally {
    await b.close();
  }
});
