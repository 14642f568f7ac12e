// @vitest-environment node
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startTestBackend, testEngine, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Issue 13 item 5, the backend half: `GET v1/apps/:appId/tasks` answers a strong ETag of the list it returns and
 * 304 (no body) to a matching If-None-Match, readable cross-origin; `view=definitions` (what devices ask for)
 * leaves out the run state, so runs do not change its ETag. On SQLite and PostgreSQL (IAR_TEST_DB).
 */
describe('GET tasks: ETag and 304', () => {
  let b: TestBackend;
  let appId: number;
  const list = (query: string, headers: Record<string, string> = {}) => b.api('GET', `/v1/apps/${appId}/tasks?${query}`, { headers });
  const LIVE = 'environment=live&view=definitions';

  beforeAll(async () => {
    b = await startTestBackend();
    appId = b.server.bootstrap.appId;
  });
  afterAll(() => b?.close());

  it('answers a strong ETag and 304 with no body to a matching If-None-Match, with the CORS headers', async () => {
    const first = await list(LIVE);
    expect(first.status).toBe(200);
    const tag = first.headers.get('ETag')!;
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/); // strong: no W/
    expect(first.headers.get('Cache-Control')).toBe('private, no-cache');
    expect(first.headers.get('Access-Control-Expose-Headers')).toMatch(/\bETag\b/);

    const again = await list(LIVE, { 'If-None-Match': tag });
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();
    expect(again.headers.get('ETag')).toBe(tag);
    expect(again.headers.get('Access-Control-Allow-Origin')).toBe('*');
    expect(again.headers.get('Access-Control-Expose-Headers')).toMatch(/\bETag\b/);

    // If-None-Match compares weakly (RFC 9110): a W/ prefix, a list, or * match; anything else is a plain 200.
    for (const header of [`W/${tag}`, `"other", ${tag}`, '*']) expect((await list(LIVE, { 'If-None-Match': header })).status).toBe(304);
    for (const header of ['"other"', 'garbage', tag.slice(1, -1), '""']) {
      const answer = await list(LIVE, { 'If-None-Match': header });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ETag')).toBe(tag);
    }

    // A preflight of a screen on another origin may send If-None-Match.
    const preflight = await b.api('OPTIONS', `/v1/apps/${appId}/tasks`, {
      token: null,
      headers: { Origin: 'https://screens.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'auth-token, if-none-match' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('Access-Control-Allow-Headers')).toMatch(/\bIf-None-Match\b/);
  });

  it('changes the ETag when an action is published, changed, unpublished or removed, and per environment', async () => {
    const tagOf = async (query: string) => (await list(query)).headers.get('ETag')!;
    const before = await tagOf(LIVE);
    const viewerBefore = await tagOf('environment=viewer&view=definitions');
    const action = await b.studio.App.Actions.create({ name: 'etag-a', environment: 'client', triggers: [{ trigger: 'analytics' }] });
    // A working copy only: the live list is the same, the viewer list is not.
    expect(await tagOf(LIVE)).toBe(before);
    expect(await tagOf('environment=viewer&view=definitions')).not.toBe(viewerBefore);

    await b.studio.App.Actions.publish(action.id, true);
    const published = await list(LIVE, { 'If-None-Match': before });
    expect(published.status).toBe(200);
    expect(published.body.actions.map((a: { name: string }) => a.name)).toEqual(['etag-a']);
    const afterPublish = published.headers.get('ETag')!;
    expect(afterPublish).not.toBe(before);

    await b.studio.App.Actions.update(action.id, { triggers: [{ trigger: 'analytics', where: { type: 'analytics.event' } }] });
    // Live still holds the published trigger (its updatedAt, part of the answer, moved: so may the tag).
    const edited = await list(LIVE);
    expect(edited.body.actions[0].triggers).toEqual([{ trigger: 'analytics' }]);
    await b.studio.App.Actions.publish(action.id, true);
    const republished = await list(LIVE, { 'If-None-Match': edited.headers.get('ETag')! });
    expect(republished.status).toBe(200);
    expect(republished.body.actions[0].triggers).toEqual([{ trigger: 'analytics', where: { type: 'analytics.event' } }]);
    expect(republished.headers.get('ETag')).not.toBe(afterPublish);

    await b.studio.App.Actions.publish(action.id, false);
    expect(await tagOf(LIVE)).toBe(before); // the same list again: the same tag
    await b.studio.App.Actions.remove(action.id);
    expect(await tagOf('environment=viewer&view=definitions')).toBe(viewerBefore);
  });

  it('view=definitions leaves out lastRunAt / nextRunAt, so a run does not change its ETag (the full list does)', async () => {
    const action = await b.studio.App.Actions.create({
      name: 'etag-run',
      environment: 'server',
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: '{{ 1 }}' } }],
    });
    await b.studio.App.Actions.publish(action.id, true);
    const definitions = await list(LIVE);
    const full = await list('environment=live');
    const mine = definitions.body.actions.find((a: { id: number }) => a.id === action.id);
    expect(mine).toMatchObject({ name: 'etag-run', published: true });
    expect(mine).not.toHaveProperty('lastRunAt');
    expect(mine).not.toHaveProperty('nextRunAt');
    expect(full.body.actions.find((a: { id: number }) => a.id === action.id)).toMatchObject({ lastRunAt: null });

    await b.studio.App.Actions.runWithResult('etag-run', {});
    await eventually(
      async () => (await list('environment=live')).body.actions.find((a: { id: number; lastRunAt: string | null }) => a.id === action.id)?.lastRunAt,
    );
    expect((await list(LIVE, { 'If-None-Match': definitions.headers.get('ETag')! })).status).toBe(304);
    const fullAfter = await list('environment=live', { 'If-None-Match': full.headers.get('ETag')! });
    expect(fullAfter.status).toBe(200);
    expect(fullAfter.headers.get('ETag')).not.toBe(full.headers.get('ETag'));
    // The list without environment (studio view) has an ETag too.
    const all = await list('');
    expect((await list('', { 'If-None-Match': all.headers.get('ETag')! })).status).toBe(304);
    await b.studio.App.Actions.remove(action.id);
  });

  it('refuses an unknown view with a 400 naming it', async () => {
    const answer = await list('environment=live&view=everything');
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'INVALID_PARAMETER' });
    expect(answer.body.error.message).toMatch(/view/);
    expect((await list('environment=nowhere&view=definitions')).status).toBe(400);
  });
});

describe('GET tasks: two instances on one database answer the same ETag', () => {
  const servers: RunningServer[] = [];
  let cleanup = async () => {};
  afterAll(async () => {
    for (const s of servers) await s.close().catch(() => undefined);
    await cleanup();
  });

  it('the tag is a hash of the body, so any instance confirms a list another one served', async () => {
    let where: { databaseUrl: string } | { dataDir: string };
    if (testEngine === 'postgres') {
      const database = await createTestDatabase();
      where = { databaseUrl: database.url };
      cleanup = () => database.drop();
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'iar-etag-'));
      where = { dataDir: dir };
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
    servers.push(await startServer({ port: 0, log: false, ...where }));
    servers.push(await startServer({ port: 0, log: false, ...where }));
    const [one, two] = servers as [RunningServer, RunningServer];
    const { appId, apiToken, studioToken } = one.bootstrap;
    const created = await fetch(`${one.url}/v1/apps/${appId}/tasks`, {
      method: 'POST',
      headers: { 'Auth-token': studioToken, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'shared', environment: 'client', triggers: [{ trigger: 'analytics' }] }),
    });
    expect(created.status).toBe(201);
    const get = (server: RunningServer, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/v1/apps/${appId}/tasks?environment=viewer&view=definitions`, { headers: { 'Auth-token': apiToken, ...headers } });
    const fromOne = await get(one);
    expect(fromOne.status).toBe(200);
    const tag = fromOne.headers.get('ETag')!;
    const fromTwo = await get(two, { 'If-None-Match': tag });
    expect(fromTwo.status).toBe(304);
    expect(fromTwo.headers.get('ETag')).toBe(tag);
  });
});
