import type { Database, Queryable } from '../../src/server/db/database.js';
import { openSqlite } from '../../src/server/db/sqlite.js';

/**
 * A SQLite database file whose reads (`all`, `get`) run on a reader thread (src/server/db/sqlite-readers/), each
 * its own Database.bounded read with a budget far beyond any test's, as the server runs the reads of a data source
 * query: differential tests read through it, so their answers cross the thread as the server's do.
 */
export async function openSqliteOnReaders(file: string): Promise<Database> {
  const db = openSqlite({ file });
  await db.startReaders(1);
  const all: Queryable['all'] = (sql, params) => db.bounded(600_000, (q) => q.all(sql, params));
  const get: Queryable['get'] = (sql, params) => db.bounded(600_000, (q) => q.get(sql, params));
  return { ...db, all, get };
}
