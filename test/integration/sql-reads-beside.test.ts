import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { tenantRequests } from '../helpers/tenant-requests.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/**
 * "No tenant can slow down another" for the reads the database runs (docs/data-sources.md, "Time budgets"), over
 * HTTP on the real server with a database file: a slow aggregation of one app holds a SQLite reader thread
 * (db/sqlite-readers/) or a PostgreSQL connection, not the server, so another organization's plain select
 * answers first; and a read sees every write answered before it started (read-your-writes across connections).
 * The test process is the server's: were the slow statement on its thread, the plain request could not even be
 * sent (its timer could not fire) before the slow one had ended.
 */
const BUDGET_MS = 5000;
const slowWhere = { $or: Array.from({ length: 200 }, (_, i) => ({ tags: `x${i}` })) };
const slowAggregate = { where: slowWhere, aggregate: [{ $group: { _id: '$data.k', n: { $sum: 1 } } }] };

describe(`budgeted reads of one app beside another's (${testEngine}, database file)`, () => {
  let b: TestBackend;
  let dir: string | undefined;
  let other: Bootstrap;

  const { request, createWithEntries: create } = tenantRequests(() => b.url);

  beforeAll(async () => {
    if (testEngine === 'sqlite') dir = mkdtempSync(join(tmpdir(), 'iar-beside-'));
    b = await startTestBackend({ dataDir: dir, limits: { aggregateTimeoutMs: BUDGET_MS } });
    other = await b.server.createOrganization('Other');
  }, 60_000);

  afterAll(async () => {
    await b?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("another app's plain select answers while a slow aggregation runs", async () => {
    const slow = await create(
      b.server.bootstrap,
      'Slow',
      Array.from({ length: 2000 }, (_, i) => ({ k: i % 7, tags: Array.from({ length: 100 }, (_, j) => j) })),
    );
    const plain = await create(other, 'Plain', [
      { city: 'Oslo', n: 1 },
      { city: 'Bergen', n: 2 },
    ]);
    const done: string[] = [];
    const late = request(b.server.bootstrap.apiToken, 'POST', `/v1/data-sources/${slow}/data/query`, slowAggregate).then((r) => {
      done.push('slow');
      return r;
    });
    // Sent 300 ms after the slow one: its statement is running by then (seconds to minutes; the budget stops it at 5 s).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const select = await request(other.apiToken, 'POST', `/v1/data-sources/${plain}/data/query`, { where: { city: 'Oslo' }, includePagination: true });
    done.push('plain');
    expect(select.status).toBe(200);
    expect(select.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ city: 'Oslo', n: 1 }]);
    expect(select.body.pagination.total).toBe(1);
    const slowAnswer = await late;
    expect(slowAnswer.status).toBe(422);
    expect(slowAnswer.body.error.code).toBe('QUERY_TIMEOUT');
    expect(done).toEqual(['plain', 'slow']);
  }, 120_000);

  it('a read sees every write answered before it', async () => {
    const boot = b.server.bootstrap;
    const ds = await create(boot, 'Writes', [{ n: 0 }]);
    const query = (json: unknown) => request(boot.apiToken, 'POST', `/v1/data-sources/${ds}/data/query`, json);
    for (let i = 1; i <= 25; i++) {
      const inserted = await request(boot.apiToken, 'POST', `/v1/data-sources/${ds}/data`, { entries: [{ n: i }], append: true });
      expect(inserted.status).toBe(200);
      const counted = await query({ where: { n: { $gte: 0 } }, limit: 1, includePagination: true });
      expect({ i, total: counted.body.pagination?.total }).toEqual({ i, total: i + 1 });
      const grouped = await query({ aggregate: [{ $group: { _id: null, top: { $max: '$data.n' } } }] });
      expect({ i, top: grouped.body.entries }).toEqual({ i, top: [{ _id: null, top: i }] });
    }
  }, 120_000);
});
