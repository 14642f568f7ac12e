import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '../../src/server/db/database.js';
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
