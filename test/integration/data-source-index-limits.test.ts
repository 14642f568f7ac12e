import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';

/**
 * Path indexes live on the entries table every tenant shares, and each one costs every write of it (docs/sql.md
 * "Indexes", limits): at most `limits.pathIndexesPerOrganization` of one organization and `limits.pathIndexes` on the
 * backend. Past them a declared index is 422 INDEX_LIMIT, and nothing of the change is saved.
 */
describe(`path index limits (${testEngine})`, () => {
  let b: TestBackend;
  let other: Bootstrap;
  let dir: string | undefined;
  beforeAll(async () => {
    // SQLite on a file: index builds run on a thread of their own, so requests at the same moment interleave.
    if (testEngine === 'sqlite') dir = mkdtempSync(join(tmpdir(), 'iar-index-limits-'));
    b = await startTestBackend({ dataDir: dir, limits: { pathIndexesPerOrganization: 3, pathIndexes: 7 } });
    other = await b.server.createOrganization('other-tenant');
  });
  afterAll(async () => {
    await b?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const create = (name: string, indexes: string[], token?: string, appId = b.server.bootstrap.appId) =>
    b.api('POST', `/v1/data-sources?appId=${appId}`, { token, json: { name, definition: { indexes } } });
  const declared = async (id: number) => (await b.api('GET', `/v1/data-sources/${id}`)).body.dataSource.definition?.indexes;

  it("an organization's indexes stop at its limit; a refused change saves nothing", async () => {
    const first = await create('limited-a', ['x', 'y']);
    expect(first.status).toBe(201);
    const id = first.body.dataSource.id as number;
    const over = await b.api('PUT', `/v1/data-sources/${id}`, { json: { definition: { indexes: ['x', 'y', 'z', 'w'] } } });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('INDEX_LIMIT');
    expect(over.body.error.message).toMatch(/have 2 path indexes.*2 more.*limits\.pathIndexesPerOrganization/);
    expect(await declared(id)).toEqual(['x', 'y']);
    // One more fits (3 of 3), also in a second data source of the organization; the next does not.
    expect((await b.api('PUT', `/v1/data-sources/${id}`, { json: { definition: { indexes: ['x', 'y', 'z'] } } })).status).toBe(200);
    const second = await create('limited-b', ['n']);
    expect(second.status).toBe(422);
    expect(second.body.error.code).toBe('INDEX_LIMIT');
    expect((await b.api('GET', `/v1/data-sources`)).body.dataSources.map((d: { name: string }) => d.name)).not.toContain('limited-b');
    // Re-declaring what exists adds nothing: allowed at the limit.
    expect((await b.api('PUT', `/v1/data-sources/${id}`, { json: { definition: { indexes: ['z', 'x', 'y'] } } })).status).toBe(200);
  });

  it('requests at the same moment cannot each take the last room', async () => {
    const third = await b.server.createOrganization('concurrent-tenant');
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        b.api('POST', `/v1/data-sources?appId=${third.appId}`, { token: third.apiToken, json: { name: `at-once-${i}`, definition: { indexes: ['k'] } } }),
      ),
    );
    // Each declares one index: the organization's limit (3) lets exactly three through.
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 422, 422, 422]);
  });

  it("another organization has its own room, up to the backend's limit", async () => {
    const own = await create('tenant-b', ['p'], other.apiToken, other.appId);
    expect(own.status).toBe(201);
    // 3 + 3 + 1 of 7 on the backend: the next is refused by the backend's limit (the organization has room), naming it.
    const more = await b.api('PUT', `/v1/data-sources/${own.body.dataSource.id}`, { token: other.apiToken, json: { definition: { indexes: ['p', 'q'] } } });
    expect(more.status).toBe(422);
    expect(more.body.error.message).toMatch(/limits\.pathIndexes\b/);
    expect(more.body.error.message).not.toMatch(/PerOrganization/);
  });
});
