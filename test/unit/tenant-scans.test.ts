/**
 * Look-ups a request makes that must not read every tenant's rows (migration 0017): SQLite's plan for each uses an
 * index on the column the query names (no `SCAN` of the table). Real SQLite in memory, real migrations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openSqlite, type SqliteDatabase } from '../../src/server/db/sqlite.js';

let db: SqliteDatabase;
beforeAll(async () => {
  db = openSqlite({ memory: true });
  await migrate(db, migrations);
});
afterAll(() => db?.close());

const plan = async (sql: string, params: unknown[]) =>
  (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params as (string | number)[])).map((r) => r.detail).join(' | ');

describe('look-ups by a column of every tenant', () => {
  it.each([
    ['live actions of an organization (log triggers)', 'SELECT id FROM actions WHERE organization_id = ? AND active = 1 AND published IS NOT NULL', [1]],
    ["a media folder's sub-folders", 'SELECT id FROM media_folders WHERE parent_id = ?', [1]],
    ["a media folder's files", 'SELECT path FROM media_files WHERE folder_id = ?', [1]],
    ['a data source by name alone', 'SELECT id FROM data_sources WHERE name = ? ORDER BY id', ['orders']],
  ])('%s uses an index', async (_what, sql, params) => {
    const detail = await plan(sql, params);
    expect(detail).toMatch(/USING (COVERING )?INDEX/);
    expect(detail).not.toMatch(/^SCAN|\| SCAN/);
  });

  it("an app's action log page walks its index in order (migration 0016)", async () => {
    const detail = await plan(
      "SELECT id FROM logs WHERE app_id = ? AND type IN ('app.action.completed', 'app.task.failed') AND action_id IS NOT NULL AND created_at <= ? AND (created_at < ? OR id < ?) ORDER BY created_at DESC, id DESC LIMIT 100",
      [1, 'x', 'x', 1],
    );
    expect(detail).toMatch(/logs_action_page/);
    expect(detail).not.toMatch(/TEMP B-TREE/);
  });
});
