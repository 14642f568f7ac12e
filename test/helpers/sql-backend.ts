import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '../../src/server/db/database.js';
import type { EntryRecord } from '../../src/server/data-sources/query/types.js';
import type { ServerOptions } from '../../src/server/index.js';
import { createTestDatabase } from './postgres.js';
import { startTestBackend, testEngine, type TestBackend } from './server.js';
import { openSqliteOnReaders } from './sqlite-readers.js';

/**
 * A test backend on a database the test also reads directly, for the SQL differential tests: with
 * `IAR_TEST_DB=postgres` a fresh PostgreSQL database `name`, else a SQLite file in a temporary folder whose reads
 * run on a reader thread, as the server's reads of a database file do. What to undo is pushed on `cleanup` (the
 * database's removal); the caller closes `db` and `b` first.
 */
export async function startSqlBackend(name: string, cleanup: (() => unknown)[], options: ServerOptions = {}): Promise<{ b: TestBackend; db: Database }> {
  if (testEngine === 'postgres') {
    const pgDb = await createTestDatabase(name);
    cleanup.push(() => pgDb.drop());
    const b = await startTestBackend({ ...options, databaseUrl: pgDb.url });
    const { openPostgres } = await import('../../src/server/db/postgres.js');
    return { b, db: openPostgres({ url: pgDb.url, max: 2 }) };
  }
  const dir = mkdtempSync(join(tmpdir(), `${name.replace(/_/g, '-')}-`));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const b = await startTestBackend({ ...options, dataDir: dir });
  return { b, db: await openSqliteOnReaders(join(dir, 'runtime.sqlite')) };
}

/** The stored entries of a data source, oldest id first, as the JS evaluator sees them (the differential tests' reference data). */
export async function storedEntries(db: Database, dataSourceId: number): Promise<EntryRecord[]> {
  const rows = await db.all<{ id: number; data: string; sort_order: number; created_at: string; updated_at: string }>(
    'SELECT id, data, sort_order, created_at, updated_at FROM data_source_entries WHERE data_source_id = ? ORDER BY id',
    [dataSourceId],
  );
  return rows.map((r) => ({ id: r.id, dataSourceId, data: JSON.parse(r.data), order: r.sort_order, createdAt: r.created_at, updatedAt: r.updated_at }));
}

/** A test backend (startSqlBackend) with one data source of `rows`, its stored entries, and what undoes it all. */
export interface SqlDataSourceFixture {
  b: TestBackend;
  db: Database;
  dsId: number;
  entries: EntryRecord[];
  close(): Promise<void>;
}

export async function openSqlDataSource(name: string, rows: readonly Record<string, unknown>[], options: ServerOptions = {}): Promise<SqlDataSourceFixture> {
  const cleanup: (() => unknown)[] = [];
  const { b, db } = await startSqlBackend(name, cleanup, options);
  const close = async () => {
    await db.close();
    await b.close();
    for (const f of cleanup.reverse()) await f();
  };
  try {
    const ds = await b.client.DataSources.create({ name });
    await (await b.client.DataSources.connect(ds.id)).import([...rows]);
    return { b, db, dsId: ds.id, entries: await storedEntries(db, ds.id), close };
  } catch (error) {
    await close();
    throw error;
  }
}
