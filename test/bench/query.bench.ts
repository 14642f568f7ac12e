import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runQuery, type EntryRecord, type QueryBody } from '../../src/server/data-sources/query/index.js';

/**
 * Query engine over 100,000 entries: `where` + `order` + `limit` against baselines measured in the same run:
 * - a bare JS loop that only reads `data.<col>` of every entry (the floor of any scan in JS);
 * - a plain SQLite scan of the same rows with JSON.parse of `data` (what loading the entries costs anyway).
 * Prints a table; figures go to docs/benchmarks.md ("Query engine").
 */
const N = 100_000;
const CITIES = Array.from({ length: 20 }, (_, i) => `City ${i}`);

function synthetic(): EntryRecord[] {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const entries: EntryRecord[] = new Array(N);
  for (let i = 0; i < N; i++) {
    const age = Math.floor(random() * 80);
    entries[i] = {
      id: i + 1,
      dataSourceId: 1,
      data: {
        name: `User ${i}`,
        email: `user${i}@example.com`,
        city: CITIES[Math.floor(random() * CITIES.length)],
        age: i % 3 === 0 ? String(age) : age, // a third stored as numeric strings
        score: Math.round(random() * 1_000_000) / 100,
        active: random() < 0.5,
        joined: `2024-${String(1 + Math.floor(random() * 12)).padStart(2, '0')}-${String(1 + Math.floor(random() * 28)).padStart(2, '0')}`,
      },
      order: 0,
      createdAt: new Date(1_700_000_000_000 + i * 1000).toISOString(),
      updatedAt: new Date(1_700_000_000_000 + i * 1000).toISOString(),
    };
  }
  return entries;
}

function measure(fn: () => unknown, runs = 15): { median: number; min: number } {
  for (let i = 0; i < 3; i++) fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, min: times[0]! };
}

async function measureAsync(fn: () => Promise<unknown>, runs = 15): Promise<{ median: number; min: number }> {
  for (let i = 0; i < 3; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, min: times[0]! };
}

const noJoins = { load: async () => [] as EntryRecord[] };

describe('query engine benchmark', () => {
  it('where + order + limit over 100,000 entries', async () => {
    const entries = synthetic();

    let sink = 0;
    const bareLoop = measure(() => {
      let count = 0;
      for (let i = 0; i < entries.length; i++) if (entries[i]!.data.city !== undefined) count++;
      sink += count;
    });

    const db = new Database(':memory:');
    db.exec('CREATE TABLE entries (id INTEGER PRIMARY KEY, data_source_id INTEGER, data TEXT, "order" INTEGER, created_at TEXT, updated_at TEXT)');
    const insert = db.prepare('INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (const e of entries) insert.run(e.id, e.dataSourceId, JSON.stringify(e.data), e.order, e.createdAt, e.updatedAt);
    })();
    const scan = db.prepare('SELECT id, data FROM entries WHERE data_source_id = ?');
    const sqliteScan = measure(() => {
      let count = 0;
      for (const row of scan.iterate(1) as Iterable<{ id: number; data: string }>) if ((JSON.parse(row.data) as { city?: string }).city !== undefined) count++;
      sink += count;
    }, 7);

    const cases: [string, QueryBody][] = [
      [
        'sift where + order data.score DESC + limit 20',
        { type: 'select', where: { city: 'City 3', age: { $gte: 30 } }, order: [['data.score', 'DESC']], limit: 20 },
      ],
      [
        '$filters (oneof, >=) + order + limit 20',
        {
          type: 'select',
          where: {
            $filters: [
              { column: 'city', condition: 'oneof', value: 'City 1,City 2,City 3' },
              { column: 'age', condition: '>=', value: '30' },
            ],
          },
          order: [['data.score', 'DESC']],
          limit: 20,
        },
      ],
      [
        'broad where ($iLike, ~100% match) + order + limit 20',
        { type: 'select', where: { email: { $iLike: 'example' } }, order: [['data.age', 'ASC']], limit: 20 },
      ],
      [
        'where + order + limit 20, includePagination',
        { type: 'select', where: { active: true }, order: [['data.joined', 'DESC']], limit: 20, offset: 40, includePagination: true },
      ],
    ];
    const rows: Record<string, string | number>[] = [];
    for (const [label, body] of cases) {
      const result = await runQuery(entries, body, noJoins);
      expect(result.entries.length).toBe(20);
      const time = await measureAsync(() => runQuery(entries, body, noJoins));
      rows.push({
        query: label,
        'median ms': +time.median.toFixed(1),
        'min ms': +time.min.toFixed(1),
        'x bare JS loop': +(time.median / bareLoop.median).toFixed(1),
        'x SQLite scan+parse': +(time.median / sqliteScan.median).toFixed(2),
      });
    }
    console.log(`\nQuery engine, ${N.toLocaleString('en')} entries (Node ${process.versions.node})`);
    console.log(`baseline bare JS loop reading data.city: ${bareLoop.median.toFixed(2)} ms; SQLite scan + JSON.parse: ${sqliteScan.median.toFixed(1)} ms`);
    console.table(rows);
    expect(sink).toBeGreaterThan(0);
    db.close();
  });
});
