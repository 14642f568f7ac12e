/**
 * What a path index on the shared entries table costs every write of it (docs/sql.md "Indexes", limits): bare
 * SQLite (better-sqlite3, in memory), a table like data_source_entries with N partial expression indexes `WHERE
 * data_source_id = <another data source>` (none of which the inserted rows belong to), 2,000 inserts each. The
 * baseline is the same inserts with no path index, in the same run.
 */
import BetterSqlite3 from 'better-sqlite3';
import { loadavg } from 'node:os';
import { test } from 'vitest';

function insertMicros(indexes: number): number {
  const db = new BetterSqlite3(':memory:');
  db.exec('CREATE TABLE e (id INTEGER PRIMARY KEY, data_source_id INTEGER, data TEXT); CREATE INDEX e_ds ON e (data_source_id, id)');
  for (let i = 0; i < indexes; i++) db.exec(`CREATE INDEX p${i} ON e (json_extract(data, '$.c'), id) WHERE data_source_id = ${i + 10}`);
  const insert = db.prepare('INSERT INTO e (data_source_id, data) VALUES (1, ?)');
  for (let i = 0; i < 200; i++) insert.run('{"c":1}');
  const start = performance.now();
  for (let i = 0; i < 2000; i++) insert.run('{"c":1}');
  const micros = ((performance.now() - start) * 1000) / 2000;
  db.close();
  return micros;
}

test('inserts beside N partial indexes of other data sources', () => {
  const rows = [0, 50, 100, 200, 500, 1000].map((n) => ({ indexes: n, 'µs per insert': +insertMicros(n).toFixed(1) }));
  const base = rows[0]!['µs per insert'];
  console.log(
    `\nPartial indexes on one table (load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')})\n`,
  );
  console.table(rows.map((r) => ({ ...r, 'x no index': +(r['µs per insert'] / base).toFixed(1) })));
}, 600_000);
