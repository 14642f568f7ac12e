import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionLog } from '../../src/contract/actions.js';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually, rejection } from '../helpers/wait.js';

const fn = (name: string, settings: Record<string, unknown>) => ({ functionPackage: `com.client.function.${name}`, settings });

let b: TestBackend;
let appId: number;
beforeAll(async () => {
  b = await startTestBackend();
  appId = b.server.bootstrap.appId;
});
afterAll(() => b.close());

const logsOf = async (id: number): Promise<ActionLog[]> => (await b.client.App.Actions.getLogs({ id, limit: 100 })).logs;

describe('log triggers', () => {
  it('fire on a matching insert only, with the spec context { trigger, log }', async () => {
    const orders = await b.client.DataSources.create({ name: 'orders' });
    const other = await b.client.DataSources.create({ name: 'other' });
    const onInsert = await b.client.App.Actions.create({
      name: 'on-order',
      triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: orders.id } }],
      functions: [fn('return', { value: '{{ ({ trigger, log }) }}' })],
    });
    const byColumn = await b.client.App.Actions.create({
      name: 'on-title',
      environment: 'any',
      triggers: [{ trigger: 'log', where: { data: { columns: 'title' } } }],
      functions: [fn('return', { value: '{{ log.dataSourceEntryId }}' })],
    });
    const unpublished = await b.client.App.Actions.create({ name: 'draft-trigger', triggers: [{ trigger: 'log' }], functions: [fn('return', { value: 1 })] });
    await b.client.App.Actions.publish(onInsert.id, true);
    await b.client.App.Actions.publish(byColumn.id, true);

    const ordersConn = await b.client.DataSources.connect(orders.id);
    const otherConn = await b.client.DataSources.connect(other.id);
    const entry = await ordersConn.insert({ item: 'tea', qty: 2 });
    await otherConn.insert({ item: 'coffee' });
    await ordersConn.update(entry.id, { qty: 3 });

    const [log] = await eventually(async () => {
      const l = await logsOf(onInsert.id);
      return l.length >= 1 && l;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await logsOf(onInsert.id)).toHaveLength(1);
    expect(log!.type).toBe('app.action.completed');
    expect(log!.data.mode).toBe('on-demand');
    const context = log!.data.result as { trigger: string; log: Record<string, unknown> };
    expect(context.trigger).toBe('log');
    expect(context.log).toMatchObject({
      id: expect.any(Number),
      appId,
      organizationId: b.server.bootstrap.organizationId,
      dataSourceId: orders.id,
      dataSourceEntryId: entry.id,
      appNotificationId: null,
      sessionId: null,
      type: 'dataSource.entry.create',
      data: { columns: expect.arrayContaining(['item', 'qty']) },
      createdAt: expect.any(String),
    });
    expect(await logsOf(byColumn.id)).toHaveLength(0);
    expect(await logsOf(unpublished.id)).toHaveLength(0);

    // Partial-document where: any log whose data.columns holds "title".
    const titled = await otherConn.insert({ title: 'x' });
    const titledLogs = await eventually(async () => {
      const l = await logsOf(byColumn.id);
      return l.length === 1 && l;
    });
    expect(titledLogs[0]!.data.result).toBe(titled.id);
  });

  it('a trigger published again, or deactivated, applies to the next write (the definitions seen are memoized by their text)', async () => {
    const first = await b.client.DataSources.create({ name: 'first-source' });
    const second = await b.client.DataSources.create({ name: 'second-source' });
    const watcher = await b.client.App.Actions.create({
      name: 'moving-trigger',
      triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: first.id } }],
      functions: [fn('return', { value: '{{ log.dataSourceId }}' })],
    });
    await b.client.App.Actions.publish(watcher.id, true);
    const one = await b.client.DataSources.connect(first.id);
    const two = await b.client.DataSources.connect(second.id);
    const results = async () => (await logsOf(watcher.id)).map((l) => l.data.result).sort();
    await one.insert({ n: 1 });
    await eventually(async () => (await results()).length === 1);
    // The same action now watches the second data source only.
    await b.client.App.Actions.update(watcher.id, { triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: second.id } }] });
    await b.client.App.Actions.publish(watcher.id, true);
    await one.insert({ n: 2 });
    await two.insert({ n: 3 });
    await eventually(async () => (await results()).length === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(await results()).toEqual([first.id, second.id].sort());
    // Deactivated: no run.
    await b.client.App.Actions.update(watcher.id, { active: false });
    await two.insert({ n: 4 });
    await new Promise((r) => setTimeout(r, 300));
    expect(await results()).toHaveLength(2);
  });
});

describe('screen-targeted actions', () => {
  it('run the handler the screen registers, with the screen version of the environment', async () => {
    const page = await b.api('POST', `/v1/apps/${appId}/pages`, {
      json: { name: 'Calc', script: 'Client.Page.onRemoteExecution(async (payload) => ({ sum: payload.a + payload.b, v: 1 }));' },
    });
    const pageId = page.body.page.id as number;
    await b.api('POST', `/v1/apps/${appId}/pages/${pageId}/publish`, { json: { publish: true } });
    await b.api('PUT', `/v1/apps/${appId}/pages/${pageId}`, {
      json: { script: 'Client.Page.onRemoteExecution((payload) => ({ sum: payload.a + payload.b, v: 2 }));' },
    });
    const action = await b.client.App.Actions.create({ name: 'calc', pageId });
    await b.client.App.Actions.publish(action.id, true);
    expect(await b.client.App.Actions.runWithResult('calc', { a: 2, b: 3 })).toEqual({ sum: 5, v: 1 });
    const viewer = createClient({ baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, environment: 'viewer' });
    expect(await viewer.App.Actions.runWithResult('calc', { a: 2, b: 3 })).toEqual({ sum: 5, v: 2 });

    const silent = await b.api('POST', `/v1/apps/${appId}/pages`, { json: { name: 'Silent', script: 'var nothing = 1;' } });
    await b.api('POST', `/v1/apps/${appId}/pages/${silent.body.page.id}/publish`, { json: { publish: true } });
    const noHandler = await b.client.App.Actions.create({ name: 'no-handler', pageId: silent.body.page.id });
    await b.client.App.Actions.publish(noHandler.id, true);
    const error = await rejection(b.client.App.Actions.runWithResult('no-handler'));
    expect(error.message).toContain('onRemoteExecution');
  });

  it('scheduled runs use the published screen', async () => {
    let now = Date.parse('2025-05-01T10:10:00Z');
    const sb = await startTestBackend({ clock: () => now });
    try {
      const sAppId = sb.server.bootstrap.appId;
      const page = await sb.api('POST', `/v1/apps/${sAppId}/pages`, { json: { name: 'S', script: 'Client.Page.onRemoteExecution(() => "published");' } });
      const pageId = page.body.page.id;
      await sb.api('POST', `/v1/apps/${sAppId}/pages/${pageId}/publish`, { json: { publish: true } });
      await sb.api('PUT', `/v1/apps/${sAppId}/pages/${pageId}`, { json: { script: 'Client.Page.onRemoteExecution(() => "working");' } });
      const action = await sb.client.App.Actions.create({ name: 's', pageId, frequency: '0 * * * *', triggers: [{ trigger: 'schedule' }] });
      await sb.client.App.Actions.publish(action.id, true);
      now = Date.parse('2025-05-01T11:00:00Z');
      await sb.server.tick();
      const logs = await eventually(async () => {
        const l = (await sb.client.App.Actions.getLogs({ id: action.id })).logs;
        return l.length === 1 && l;
      });
      expect(logs[0]!.type).toBe('app.task.completed');
      expect(logs[0]!.data.result).toBe('published');
    } finally {
      await sb.close();
    }
  });
});

describe('log trigger loops', () => {
  it('an action whose writes trigger itself stops after limits.logTriggerChain runs in a row, and logs the skip', async () => {
    const lb = await startTestBackend({ limits: { logTriggerChain: 3 } });
    try {
      const echo = await lb.client.DataSources.create({ name: 'echo' });
      const action = await lb.client.App.Actions.create({
        name: 'echo-again',
        triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: echo.id } }],
        functions: [fn('insert-entry', { dataSourceName: 'echo', data: { n: '{{ (log.data.chain || 0) + 1 }}' } })],
      });
      await lb.client.App.Actions.publish(action.id, true);
      const conn = await lb.client.DataSources.connect(echo.id);
      await conn.insert({ n: 0 }); // a write of no run: chain 0
      const skipped = await eventually(async () => {
        const { logs } = await lb.client.App.Actions.getLogs({ id: action.id, where: { type: 'app.task.skipped' } });
        return logs.length > 0 && logs;
      });
      expect(skipped).toHaveLength(1);
      expect(skipped[0]!.data.result).toMatchObject({ reason: 'loop', chain: 4 });
      // Three runs (chains 1, 2, 3), each writing one entry; the fourth was skipped, so nothing more comes.
      await new Promise((r) => setTimeout(r, 300));
      const runs = await lb.client.App.Actions.getLogs({ id: action.id });
      expect(runs.logs.map((l) => l.type)).toEqual(['app.action.completed', 'app.action.completed', 'app.action.completed']);
      expect((await conn.find({})).map((e) => e.data.n).sort()).toEqual([0, 1, 2, 3]);
      // A manual write starts a new chain: the loop guard does not block the action for good.
      await conn.insert({ n: 0 });
      await eventually(async () => (await lb.client.App.Actions.getLogs({ id: action.id, where: { type: 'app.task.skipped' } })).logs.length === 2);
    } finally {
      await lb.close();
    }
  });
});
