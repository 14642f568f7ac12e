import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isApiError, isClientError } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { rejection } from '../helpers/wait.js';

let b: TestBackend;
beforeAll(async () => {
  b = await startTestBackend();
});
afterAll(() => b.close());

const setNode = (value: unknown) => ({ functionPackage: 'com.client.function.return', settings: { value } });

describe('actions CRUD', () => {
  it('creates with defaults, lists with lastRunAt/nextRunAt, reads by id and by name', async () => {
    const action = await b.client.App.Actions.create({ name: 'greet', functions: [setNode('hi')] });
    expect(action).toMatchObject({
      name: 'greet',
      active: true,
      environment: 'server',
      timezone: 'UTC',
      frequency: null,
      triggers: [{ trigger: 'manual' }],
      published: false,
      lastRunAt: null,
      nextRunAt: null,
    });
    const list = await b.client.App.Actions.get();
    expect(list.map((a) => a.name)).toContain('greet');
    const byName = await b.api('GET', `/v1/apps/${b.server.bootstrap.appId}/tasks/greet`);
    const byId = await b.api('GET', `/v1/apps/${b.server.bootstrap.appId}/tasks/${action.id}`);
    expect(byName.body.action.id).toBe(action.id);
    expect(byId.body.action.name).toBe('greet');
  });

  it('refuses a taken name with 409, also on rename', async () => {
    await b.client.App.Actions.create({ name: 'unique-one' });
    const error = await rejection(b.client.App.Actions.create({ name: 'unique-one' }));
    expect(isApiError(error) && error.status).toBe(409);
    expect(error.code).toBe('NAME_TAKEN');
    await b.client.App.Actions.create({ name: 'unique-two' });
    const rename = await rejection(b.client.App.Actions.update('unique-two', { name: 'unique-one' }));
    expect(rename.status).toBe(409);
  });

  it('updates by id and by name; remove by either', async () => {
    const a = await b.client.App.Actions.create({ name: 'upd' });
    const u1 = await b.client.App.Actions.update(a.id, { functions: [setNode(1)] });
    expect(u1.functions).toEqual([setNode(1)]);
    const u2 = await b.client.App.Actions.update('upd', { active: false, name: 'upd2' });
    expect(u2).toMatchObject({ active: false, name: 'upd2', functions: [setNode(1)] });
    await b.client.App.Actions.remove('upd2');
    const gone = await rejection(b.client.App.Actions.update(a.id, { active: true }));
    expect(gone.status).toBe(404);
    const again = await rejection(b.client.App.Actions.remove(a.id));
    expect(again.code).toBe('ACTION_NOT_FOUND');
  });

  it('validates on the client first, naming the path', async () => {
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: 'logs' }, 'name'],
      [{ name: 'functions' }, 'name'],
      [{ name: 'runs' }, 'name'],
      [{ name: '123' }, 'name'],
      [{ name: 'x', frequency: '* * *' }, 'frequency'],
      [{ name: 'x', timezone: 'Mars/Olympus' }, 'timezone'],
      [{ name: 'x', environment: 'cloud' }, 'environment'],
      [{ name: 'x', triggers: [{ trigger: 'webhook' }] }, 'triggers[0].trigger'],
      [{ name: 'x', environment: 'client', triggers: [{ trigger: 'log' }] }, 'triggers[0].trigger'],
      [{ name: 'x', environment: 'client', frequency: '* * * * *', triggers: [{ trigger: 'schedule' }] }, 'triggers[0].trigger'],
      [{ name: 'x', environment: 'server', triggers: [{ trigger: 'analytics' }] }, 'triggers[0].trigger'],
      [{ name: 'x', triggers: [{ trigger: 'schedule' }] }, 'frequency'],
      [{ name: 'x', functions: [{ settings: {} }] }, 'functions[0].functionPackage'],
      [{ name: 'x', functions: [{ type: 'loop' }] }, 'functions[0]'],
      [{ name: 'x', functions: [{ type: 'loop', range: { from: 0, to: true } }] }, 'functions[0].range.to'],
      [{ name: 'x', functions: [{ ...setNode(1), timeout: -1 }] }, 'functions[0].timeout'],
      [{ name: 'x', functions: [{ ...setNode(1), retry: { attempts: 100 } }] }, 'functions[0].retry.attempts'],
      [{ name: 'x', functions: [{ type: 'loop', items: 'xs', continueOnError: 'yes' }] }, 'functions[0].continueOnError'],
      [{ name: 'x', functions: [setNode(1), { type: 'if', conditions: [{ condition: '' }] }] }, 'functions[1].conditions[0].condition'],
      [{ name: 'x', functions: [{ type: 'if' }] }, 'functions[0].conditions'],
      [{ name: 'x', functions: [{ functionPackage: 'a', functions: [{ type: 'loop', items: 5 }] }] }, 'functions[0].functions[0].items'],
    ];
    // A range bound may be an expression, as the engine allows; policies within their bounds are accepted.
    const ranged = await b.client.App.Actions.create({
      name: 'ranged',
      functions: [
        {
          type: 'loop',
          range: { from: 1, to: '{{ n }}' },
          timeout: 500,
          functions: [{ ...setNode('{{ currentItem }}'), retry: { attempts: 2, backoff: 'constant', delayMs: 0 } }],
        },
      ],
    });
    expect(ranged.functions[0]).toMatchObject({ range: { from: 1, to: '{{ n }}' }, timeout: 500 });
    await b.client.App.Actions.remove(ranged.id);
    for (const [definition, path] of cases) {
      const error = await rejection(b.client.App.Actions.create(definition as never));
      expect(isClientError(error), JSON.stringify(definition)).toBe(true);
      expect(error.code).toBe('INVALID_ACTION');
      expect(
        error.details.issues.map((i: { path: string }) => i.path),
        JSON.stringify(definition),
      ).toContain(path);
      expect(error.message).toContain(path);
    }
  });

  it('validates again on the server (400 shape, 422 meaning), including cron-parser and update merges', async () => {
    const appId = b.server.bootstrap.appId;
    const shape = await b.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'srv', functions: [{ type: 'if', conditions: [{ condition: 3 }] }] } });
    expect(shape.status).toBe(400);
    expect(shape.body.error.code).toBe('INVALID_ACTION');
    expect(shape.body.error.message).toContain('functions[0].conditions[0].condition');
    const cron = await b.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'srv', frequency: '0 0 31 2 *' } });
    expect(cron.status).toBe(422);
    expect(cron.body.error.issues[0].path).toBe('frequency');
    const words = await b.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'logs' } });
    expect(words.status).toBe(422);
    // A schedule trigger added later needs the frequency stored before or given now.
    await b.client.App.Actions.create({ name: 'later-schedule' });
    const later = await b.api('PUT', `/v1/apps/${appId}/tasks/later-schedule`, { json: { triggers: [{ trigger: 'schedule' }] } });
    expect(later.status).toBe(422);
    expect(later.body.error.message).toContain('frequency');
    const ok = await b.api('PUT', `/v1/apps/${appId}/tasks/later-schedule`, {
      json: { triggers: [{ trigger: 'schedule' }], frequency: '*/5 * * * *', timezone: 'Europe/Dublin' },
    });
    expect(ok.status).toBe(200);
    // The client checks an update against what it carries; the backend checks it against the stored environment.
    const device = await b.client.App.Actions.create({ name: 'device-only', environment: 'client' });
    const retriggered = await b.client.App.Actions.update('device-only', { triggers: [{ trigger: 'analytics', where: { type: 'analytics.event' } }] });
    expect(retriggered).toMatchObject({ id: device.id, environment: 'client', triggers: [{ trigger: 'analytics' }] });
    const onServer = await rejection(b.client.App.Actions.update('device-only', { triggers: [{ trigger: 'log' }] }));
    expect(isApiError(onServer) && onServer.status).toBe(422);
    expect(onServer.message).toContain('environment must be server or any');
    const clientSide = await rejection(b.client.App.Actions.update('device-only', { environment: 'server', triggers: [{ trigger: 'analytics' }] }));
    expect(isClientError(clientSide) && clientSide.code).toBe('INVALID_ACTION');
    expect((await b.client.App.Actions.get()).find((a) => a.id === device.id)?.triggers).toEqual([
      { trigger: 'analytics', where: { type: 'analytics.event' } },
    ]);
    const bad = await b.api('POST', `/v1/apps/${appId}/tasks`, { body: '{"name":', headers: { 'Content-Type': 'application/json' } });
    expect(bad.status).toBe(400);
    const noToken = await b.api('GET', `/v1/apps/${appId}/tasks`, { token: null });
    expect(noToken.status).toBe(401);
  });
});

describe('publication', () => {
  it('keeps a working copy and a published snapshot; live reads the snapshot, viewer the working copy', async () => {
    const appId = b.server.bootstrap.appId;
    const a = await b.client.App.Actions.create({ name: 'pub', functions: [setNode('v1')] });
    const unpublished = await b.api('GET', `/v1/apps/${appId}/tasks/pub?environment=live`);
    expect(unpublished.status).toBe(422);
    expect(unpublished.body.error.code).toBe('ACTION_NOT_PUBLISHED');
    const published = await b.client.App.Actions.publish(a.id, true);
    expect(published.published).toBe(true);
    expect(published.publishedAt).toBeTypeOf('string');
    await b.client.App.Actions.update('pub', { functions: [setNode('v2')] });
    const live = await b.api('GET', `/v1/apps/${appId}/tasks/pub?environment=live`);
    const viewer = await b.api('GET', `/v1/apps/${appId}/tasks/pub?environment=viewer`);
    expect(live.body.action.functions).toEqual([setNode('v1')]);
    expect(viewer.body.action.functions).toEqual([setNode('v2')]);
    const liveList = await b.api('GET', `/v1/apps/${appId}/tasks?environment=live`);
    expect(liveList.body.actions.find((x: { name: string }) => x.name === 'pub').functions).toEqual([setNode('v1')]);
    await b.client.App.Actions.publish(a.id, false);
    const after = await b.api('GET', `/v1/apps/${appId}/tasks/pub?environment=live`);
    expect(after.body.error.code).toBe('ACTION_NOT_PUBLISHED');
    const badPublish = await rejection(b.client.App.Actions.publish(a.id, 'yes' as never));
    expect(badPublish.code).toBe('INVALID_ARGUMENT');
  });

  it('an inactive action is refused with ACTION_INACTIVE', async () => {
    const appId = b.server.bootstrap.appId;
    const a = await b.client.App.Actions.create({ name: 'sleepy', active: false });
    await b.client.App.Actions.publish(a.id, true);
    const res = await b.api('POST', `/v1/apps/${appId}/tasks/sleepy/run`, { json: {} });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('ACTION_INACTIVE');
    const err = await rejection(b.client.App.Actions.run('sleepy'));
    expect(err.code).toBe('ACTION_INACTIVE');
  });

  it('nextRunAt follows the published schedule of active actions only', async () => {
    const a = await b.client.App.Actions.create({ name: 'cron', frequency: '0 9 * * *', timezone: 'Europe/Berlin', triggers: [{ trigger: 'schedule' }] });
    expect(a.nextRunAt).toBeNull();
    const p = await b.client.App.Actions.publish(a.id, true);
    expect(p.nextRunAt).toMatch(/T0[78]:00:00\.000Z$/);
    const off = await b.client.App.Actions.update(a.id, { active: false });
    expect(off.nextRunAt).toBeNull();
    const on = await b.client.App.Actions.update(a.id, { active: true });
    expect(on.nextRunAt).toBe(p.nextRunAt);
  });
});

describe('logs and screens', () => {
  it('getLogs validates options and returns { count, logs }', async () => {
    const page = await b.client.App.Actions.getLogs();
    expect(page).toEqual({ count: 0, logs: [] });
    expect((await rejection(b.client.App.Actions.getLogs({ limit: 0 }))).code).toBe('INVALID_ARGUMENT');
    expect((await rejection(b.client.App.Actions.getLogs({ where: [] as never }))).code).toBe('INVALID_ARGUMENT');
    const appId = b.server.bootstrap.appId;
    const bad = await b.api('GET', `/v1/apps/${appId}/tasks/logs?limit=abc`);
    expect(bad.status).toBe(400);
    const badWhere = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { where: { $nope: 1 } } });
    expect(badWhere.status).toBe(400);
  });

  it('stores screens with a working and a published script', async () => {
    const appId = b.server.bootstrap.appId;
    const created = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name: 'Home', script: 'var a = 1;' } });
    expect(created.status).toBe(201);
    const id = created.body.page.id;
    expect(created.body.page).toMatchObject({ name: 'Home', script: 'var a = 1;', published: false, publishedScript: null });
    await b.api('POST', `/v1/apps/${appId}/pages/${id}/publish`, { json: { publish: true } });
    const changed = await b.api('PUT', `/v1/apps/${appId}/pages/${id}`, { json: { script: 'var a = 2;' } });
    expect(changed.body.page).toMatchObject({ script: 'var a = 2;', publishedScript: 'var a = 1;', published: true });
    const badPage = await b.api('POST', `/v1/apps/${appId}/tasks`, { json: { name: 'screen-x', pageId: 9999 } });
    expect(badPage.status).toBe(422);
    const missing = await b.api('GET', `/v1/apps/${appId}/pages/9999`);
    expect(missing.status).toBe(404);
  });
});
