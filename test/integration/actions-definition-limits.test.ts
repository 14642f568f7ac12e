// @vitest-environment node
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_NODE_DEPTH, MAX_SETTINGS_DEPTH, unusableAction } from '../../src/contract/action-limits.js';
import { validateActionInput } from '../../src/contract/action-validate.js';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Issue 15, item 5: one limit of action definitions for the client, the server and the engine (a 33-level
 * pipeline passed create, then every run failed with DEPTH_LIMIT), and a device that keeps working when it
 * receives one action past the limits (an action whose settings nested 4,000 deep broke every device of its
 * app: the actions list could not be stored, analytics-triggered actions never ran, Analytics.idle() never
 * settled).
 */

const ret = (value: unknown) => ({ functionPackage: 'com.client.function.return', settings: { value } });
/** `levels` levels of nodes: each a `log` node holding the next level; the innermost returns 'deep'. */
function nested(levels: number): unknown[] {
  let list: unknown[] = [ret('deep')];
  for (let i = 1; i < levels; i++) list = [{ functionPackage: 'com.client.function.log', settings: { message: `level ${levels - i}` }, functions: list }];
  return list;
}
const deepValue = (levels: number) => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = { n: v };
  return v;
};

describe('one definition limit for client, server and engine', () => {
  let b: TestBackend;
  beforeAll(async () => {
    b = await startTestBackend();
  });
  afterAll(() => b?.close());

  it(`${MAX_NODE_DEPTH} levels of nodes are created and run; ${MAX_NODE_DEPTH + 1} are refused by the client and the server`, async () => {
    const ok = await b.client.App.Actions.create({ name: 'deepest', environment: 'server', functions: nested(MAX_NODE_DEPTH) as never });
    await b.client.App.Actions.publish(ok.id, true);
    expect(await b.client.App.Actions.runWithResult('deepest')).toBe('deep');
    // The client refuses before any request…
    await expect(
      b.client.App.Actions.create({ name: 'too-deep', environment: 'server', functions: nested(MAX_NODE_DEPTH + 1) as never }),
    ).rejects.toMatchObject({
      message: expect.stringMatching(/nested deeper than 32 levels/),
    });
    // …and the server refuses the same body from any other client.
    const raw = await b.api('POST', `/v1/apps/${b.server.bootstrap.appId}/tasks`, {
      json: { name: 'too-deep', environment: 'server', functions: nested(MAX_NODE_DEPTH + 1) },
    });
    expect(raw.status).toBe(422);
    expect(raw.body.error.message).toMatch(/functions(\[0\]\.functions){31}\[0\]: nodes are nested deeper than 32 levels/);
  });

  it(`settings nest at most ${MAX_SETTINGS_DEPTH} levels, and a definition has a size limit`, async () => {
    const appPath = `/v1/apps/${b.server.bootstrap.appId}/tasks`;
    const deep = await b.api('POST', appPath, { json: { name: 'deep-settings', functions: [ret(deepValue(MAX_SETTINGS_DEPTH + 1))] } });
    expect(deep.status).toBe(422);
    expect(deep.body.error.message).toMatch(/functions\[0\]\.settings: nests deeper than 32 levels/);
    expect((await b.api('POST', appPath, { json: { name: 'fine-settings', functions: [ret(deepValue(MAX_SETTINGS_DEPTH - 2))] } })).status).toBe(201);
    const big = await b.api('POST', appPath, { json: { name: 'big', functions: Array.from({ length: 300 }, () => ret('x'.repeat(1000))) } });
    expect(big.status).toBe(422);
    expect(big.body.error.message).toMatch(/more than 262144/);
  });
});

describe('the device guard', () => {
  it(`accepts every valid action: ${MAX_NODE_DEPTH} levels of if nodes with settings ${MAX_SETTINGS_DEPTH} deep`, () => {
    let functions: unknown[] = [ret(deepValue(MAX_SETTINGS_DEPTH - 1))];
    for (let i = 1; i < MAX_NODE_DEPTH; i++) functions = [{ type: 'if', conditions: [{ condition: 'true', functions }], elseFunctions: [] }];
    const action = { id: 1, name: 'ifs', triggers: [{ trigger: 'analytics', where: { $and: [{ data: { a: 1 } }] } }], functions };
    expect(validateActionInput({ name: 'ifs', environment: 'client', functions: functions as never })).toEqual([]);
    expect(unusableAction(action)).toBeUndefined();
    expect(unusableAction({ ...action, functions: [ret(deepValue(300))] })).toBe('nested too deep');
    expect(unusableAction({ id: 'x' })).toBe('malformed');
  });
});

describe('a device that receives one unusable action keeps working with the others', () => {
  let b: TestBackend;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'iar-actions-limits-'));
    b = await startTestBackend({ dataDir: dir });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an action stored 4,000 levels deep (before the limits) is left out; the others fire and idle() settles', async () => {
    await b.client.DataSources.create({ name: 'views' });
    const trigger = [{ trigger: 'analytics', where: { type: 'analytics.pageView' } }];
    const good = await b.client.App.Actions.create({
      name: 'good',
      environment: 'client',
      triggers: trigger as never,
      functions: [{ functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: 'views', data: { page: '{{ event.data._pageId }}' } } }],
    });
    const bad = await b.client.App.Actions.create({ name: 'bad', environment: 'client', triggers: trigger as never, functions: [ret(1)] });
    for (const a of [good, bad]) await b.client.App.Actions.publish(a.id, true);
    // A definition stored before the limits existed: settings 4,000 levels deep, written straight into the file.
    const db = new Database(join(dir, 'runtime.sqlite'));
    const published = JSON.parse((db.prepare('SELECT published FROM actions WHERE id = ?').get(bad.id) as { published: string }).published);
    published.functions[0].settings.value = '__DEEP__';
    const text = JSON.stringify(published).replace('"__DEEP__"', '{"n":'.repeat(4000) + '1' + '}'.repeat(4000));
    db.prepare('UPDATE actions SET published = ?, updated_at = ? WHERE id = ?').run(text, new Date().toISOString(), bad.id);
    db.close();

    const warnings: string[] = [];
    const device = createClient({
      baseUrl: b.url,
      appId: b.server.bootstrap.appId,
      authToken: b.server.bootstrap.apiToken,
      logger: { debug() {}, info() {}, warn: (m: string) => void warnings.push(String(m)), error: (m: string) => void warnings.push(String(m)) },
    });
    device.App.Analytics.pageView({ _pageId: 7 });
    await device.App.Analytics.idle();
    const views = await eventually(async () => {
      const entries = await (await b.client.DataSources.connect('views')).find();
      return entries.length > 0 && entries;
    });
    expect(views.map((e) => e.data)).toEqual([{ page: 7 }]);
    expect(warnings.join('\n')).toMatch(new RegExp(`action ${bad.id} ignored on this device: nested too deep`));
  });
});
