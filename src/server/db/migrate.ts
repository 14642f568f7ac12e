import type { Database } from './database.js';

export interface Migration {
  /** Numbered, e.g. `0001_core`; applied once, in list order. */
  id: string;
  /** Statements run in one transaction. Portable SQL (see database.ts). */
  up: readonly string[];
  /** Run instead of `up` on PostgreSQL, when the portable SQL cannot say it (e.g. an index's collation). */
  postgres?: readonly string[];
}

/** Applies the migrations not yet recorded in `schema_migrations`. */
export async function migrate(db: Database, migrations: readonly Migration[]): Promise<string[]> {
  await db.run('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const done = new Set((await db.all<{ id: string }>('SELECT id FROM schema_migrations')).map((r) => r.id));
  const applied: string[] = [];
  for (const migration of migrations) {
    if (done.has(migration.id)) continue;
    await db.transaction(async (tx) => {
      for (const statement of (db.dialect === 'postgres' && migration.postgres) || migration.up) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)', [migration.id, new Date().toISOString()]);
    });
    applied.push(migration.id);
  }
  return applied;
}
