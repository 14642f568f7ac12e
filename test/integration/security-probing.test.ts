import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bootstrap } from '../../src/server/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 15, no probing: for a caller without access, an existing private resource answers exactly as a missing
 * one (same status, code and message once the id is swapped), and no answer names it. Before, `GET
 * v1/data-sources/<id>` without a token or with another organization's token answered 401/403 naming the data
 * source, and 404 for an unknown id: anyone could list every tenant's data source names by id.
 */

let b: TestBackend;
let x: Bootstrap; // the caller's organization
let y: Bootstrap; // the victim's organization
const NAME = 'PayrollOfY';
const MISSING = 987_654;
let dsY: number;
let entryY: number;
let otherApp: { token: string };

type Res = { status: number; body: any };
const t = (token: string | null) => ({ token });

/** The same request for Y's resource and for a missing one gives the same answer, and it never names Y's. */
function indistinguishable(existing: Res, missing: Res, existingId: number | string, missingId: number | string, sentName = false) {
  expect(existing.status).toBe(missing.status);
  expect(existing.status).toBeGreaterThanOrEqual(400);
  expect(existing.body.error.code).toBe(missing.body.error.code);
  const [e, m] = [String(existing.body.error.message), String(missing.body.error.message)];
  // The same message, or the same once each names its own id (a short id may also occur elsewhere, e.g. in "v1").
  if (e !== m) expect(e.replaceAll(String(existingId), '<id>')).toBe(m.replaceAll(String(missingId), '<id>'));
  // A lookup by name may repeat the name the caller sent; nothing else names Y's data source.
  if (!sentName) expect(JSON.stringify(existing.body)).not.toContain(NAME);
}

beforeAll(async () => {
  b = await startTestBackend();
  x = b.server.bootstrap;
  y = await b.server.createOrganization('Victim');
  dsY = (await b.api('POST', `/v1/data-sources?appId=${y.appId}`, { token: y.apiToken, json: { name: NAME } })).body.dataSource.id;
  entryY = (await b.api('PUT', `/v1/data-sources/${dsY}/data`, { token: y.apiToken, json: { salary: 1 } })).body.id;
  const app = (await b.api('POST', `/v1/organizations/${x.organizationId}/apps`, { token: x.studioToken, json: { name: 'Second app' } })).body.app;
  otherApp = { token: (await b.api('POST', `/v1/apps/${app.id}/tokens`, { token: x.studioToken, json: { name: 'App 2' } })).body.token.token };
});
afterAll(() => b?.close());

describe('data sources', () => {
  const routes: [string, (id: number) => string, unknown][] = [
    ['GET', (id) => `/v1/data-sources/${id}`, undefined],
    ['PUT', (id) => `/v1/data-sources/${id}`, { name: 'Renamed' }],
    ['DELETE', (id) => `/v1/data-sources/${id}`, undefined],
    ['POST', (id) => `/v1/data-sources/${id}/data/query`, {}],
    ['GET', (id) => `/v1/data-sources/${id}/data`, undefined],
    ['PUT', (id) => `/v1/data-sources/${id}/data`, { a: 1 }],
    ['POST', (id) => `/v1/data-sources/${id}/commit`, { append: true, entries: [] }],
    ['GET', (id) => `/v1/data-sources/${id}/versions`, undefined],
    ['GET', (id) => `/v1/data-sources/${id}/data/1`, undefined],
  ];
  for (const [who, token] of [
    ['no token', () => null],
    ["another organization's API token", () => x.apiToken],
    ["another organization's studio token", () => x.studioToken],
    ["another organization's client token", () => x.clientToken],
  ] as [string, () => string | null][]) {
    it(`${who}: every route answers for Y's data source as for a missing one`, async () => {
      for (const [method, path, json] of routes) {
        const existing = await b.api(method, path(dsY), { ...t(token()), ...(json === undefined ? {} : { json }) });
        const missing = await b.api(method, path(MISSING), { ...t(token()), ...(json === undefined ? {} : { json }) });
        indistinguishable(existing, missing, dsY, MISSING);
      }
      // By name too (in Y's organization).
      const byName = await b.api('GET', `/v1/data-sources/${NAME}?organizationId=${y.organizationId}`, t(token()));
      const byMissingName = await b.api('GET', `/v1/data-sources/NoSuchName?organizationId=${y.organizationId}`, t(token()));
      indistinguishable(byName, byMissingName, NAME, 'NoSuchName', true);
      // Nothing changed.
      const own = await b.api('POST', `/v1/data-sources/${dsY}/data/query`, { token: y.apiToken, json: {} });
      expect(own.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ salary: 1 }]);
    });
  }

  it("an entry of Y's data source, addressed through the caller's own data source, is a missing entry", async () => {
    const own = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: 'Own' } })).body.dataSource.id;
    for (const [method, json] of [['GET'], ['PUT', { salary: 2 }], ['DELETE']] as [string, unknown?][]) {
      const existing = await b.api(method, `/v1/data-sources/${own}/data/${entryY}`, json === undefined ? {} : { json });
      const missing = await b.api(method, `/v1/data-sources/${own}/data/${MISSING}`, json === undefined ? {} : { json });
      indistinguishable(existing, missing, entryY, MISSING);
    }
    const kept = await b.api('POST', `/v1/data-sources/${dsY}/data/query`, { token: y.apiToken, json: {} });
    expect(kept.body.entries.map((e: { data: unknown }) => e.data)).toEqual([{ salary: 1 }]);
  });

  it("a server run (the guest bridge) reading Y's data source by id gets the missing answer, without its name", async () => {
    const action = await b.client.App.Actions.create({
      name: 'probe',
      environment: 'server',
      functions: [{ functionPackage: 'com.client.function.read-datasource', settings: { dataSourceId: '{{ payload.id }}' } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    const errorOf = async (id: number) => {
      try {
        await b.client.App.Actions.runWithResult('probe', { id });
        return 'no error';
      } catch (error) {
        return String((error as Error).message);
      }
    };
    const existing = await errorOf(dsY);
    const missing = await errorOf(MISSING);
    expect(existing).not.toContain(NAME);
    expect(existing.replaceAll(String(dsY), '<id>')).toBe(missing.replaceAll(String(MISSING), '<id>'));
  });

  it("a script node's Client.DataSources bridge, by id and by name, gets the missing answer for Y's data source", async () => {
    const code = 'try { await Client.DataSources.connect(payload.ref).find(); return "read"; } catch (e) { return String(e.message); }';
    const action = await b.client.App.Actions.create({
      name: 'bridge-probe',
      functions: [{ functionPackage: 'com.client.function.script', settings: { code } }],
    });
    await b.client.App.Actions.publish(action.id, true);
    const answer = (ref: number | string) => b.client.App.Actions.runWithResult('bridge-probe', { ref }) as Promise<string>;
    const [byId, missingId, byName, missingName] = [await answer(dsY), await answer(MISSING), await answer(NAME), await answer('NoSuchName')];
    expect(byId).not.toBe('read');
    expect(byId.replaceAll(String(dsY), '<id>')).toBe(missingId.replaceAll(String(MISSING), '<id>'));
    expect(byId).not.toContain(NAME);
    expect(byName).not.toBe('read');
    expect(byName.replaceAll(NAME, '<name>')).toBe(missingName.replaceAll('NoSuchName', '<name>'));
  });

  it("another app's token of the same organization does not see an app-level data source either", async () => {
    const appDs = (await b.api('POST', `/v1/data-sources?appId=${x.appId}`, { json: { name: `${NAME}App` } })).body.dataSource.id;
    const existing = await b.api('GET', `/v1/data-sources/${appDs}`, t(otherApp.token));
    const missing = await b.api('GET', `/v1/data-sources/${MISSING}`, t(otherApp.token));
    indistinguishable(existing, missing, appDs, MISSING);
  });
});

describe('actions and notifications', () => {
  let actionY: number;
  let notificationY: number;
  beforeAll(async () => {
    actionY = (await b.api('POST', `/v1/apps/${y.appId}/tasks`, { token: y.apiToken, json: { name: 'secretTask', functions: [] } })).body.action.id;
    notificationY = (await b.api('PUT', `/v1/apps/${y.appId}/notifications`, { token: y.studioToken, json: { data: { title: 'secret' } } })).body.notification
      .id;
    expect(actionY).toBeGreaterThan(0);
    expect(notificationY).toBeGreaterThan(0);
  });

  for (const [who, token] of [
    ['no token', () => null],
    ["another organization's API token", () => x.apiToken],
    ["another organization's studio token", () => x.studioToken],
    ["another organization's client token", () => x.clientToken],
  ] as [string, () => string | null][]) {
    it(`${who}: Y's app, its actions and notifications answer as missing ones`, async () => {
      const pairs: [string, string, string][] = [
        ['GET', `/v1/apps/${y.appId}/tasks/${actionY}`, `/v1/apps/${MISSING}/tasks/${actionY}`],
        ['GET', `/v1/apps/${x.appId}/tasks/${actionY}`, `/v1/apps/${x.appId}/tasks/${MISSING}`],
        ['GET', `/v1/apps/${y.appId}/tasks`, `/v1/apps/${MISSING}/tasks`],
        ['POST', `/v1/apps/${y.appId}/tasks/${actionY}/run`, `/v1/apps/${MISSING}/tasks/${actionY}/run`],
        ['DELETE', `/v1/apps/${y.appId}/notifications/${notificationY}`, `/v1/apps/${MISSING}/notifications/${notificationY}`],
        ['DELETE', `/v1/apps/${x.appId}/notifications/${notificationY}`, `/v1/apps/${x.appId}/notifications/${MISSING}`],
        ['GET', `/v1/data-sources?appId=${y.appId}`, `/v1/data-sources?appId=${MISSING}`],
        ['GET', `/v1/data-sources?organizationId=${y.organizationId}`, `/v1/data-sources?organizationId=${MISSING}`],
        ['GET', `/v1/apps/${y.appId}`, `/v1/apps/${MISSING}`],
        // Every other action route, in Y's app and through the caller's own app.
        ['PUT', `/v1/apps/${y.appId}/tasks/${actionY}`, `/v1/apps/${MISSING}/tasks/${actionY}`],
        ['PUT', `/v1/apps/${x.appId}/tasks/${actionY}`, `/v1/apps/${x.appId}/tasks/${MISSING}`],
        ['DELETE', `/v1/apps/${y.appId}/tasks/${actionY}`, `/v1/apps/${MISSING}/tasks/${actionY}`],
        ['DELETE', `/v1/apps/${x.appId}/tasks/${actionY}`, `/v1/apps/${x.appId}/tasks/${MISSING}`],
        ['POST', `/v1/apps/${y.appId}/tasks/${actionY}/publish`, `/v1/apps/${MISSING}/tasks/${actionY}/publish`],
        ['POST', `/v1/apps/${x.appId}/tasks/${actionY}/publish`, `/v1/apps/${x.appId}/tasks/${MISSING}/publish`],
        ['GET', `/v1/apps/${y.appId}/tasks/logs?id=${actionY}`, `/v1/apps/${MISSING}/tasks/logs?id=${actionY}`],
        ['GET', `/v1/apps/${y.appId}/tasks/secretTask`, `/v1/apps/${MISSING}/tasks/secretTask`],
        // Every other notification route.
        ['PUT', `/v1/apps/${y.appId}/notifications/${notificationY}`, `/v1/apps/${MISSING}/notifications/${notificationY}`],
        ['PUT', `/v1/apps/${x.appId}/notifications/${notificationY}`, `/v1/apps/${x.appId}/notifications/${MISSING}`],
        ['GET', `/v1/apps/${y.appId}/notifications/${notificationY}/deliveries`, `/v1/apps/${MISSING}/notifications/${notificationY}/deliveries`],
        ['GET', `/v1/apps/${x.appId}/notifications/${notificationY}/deliveries`, `/v1/apps/${x.appId}/notifications/${MISSING}/deliveries`],
        ['GET', `/v1/apps/${y.appId}/notifications`, `/v1/apps/${MISSING}/notifications`],
      ];
      for (const [method, existingPath, missingPath] of pairs) {
        const body = method === 'PUT' ? { json: existingPath.includes('/tasks/') ? { name: 'renamed' } : { data: { title: 'changed' } } } : {};
        const existing = await b.api(method, existingPath, { ...t(token()), ...body });
        const missing = await b.api(method, missingPath, { ...t(token()), ...body });
        const label = `${method} ${existingPath} vs ${missingPath}`;
        expect(existing.status, label).toBe(missing.status);
        expect(existing.body.error?.code, label).toBe(missing.body.error?.code);
        const norm = (m: unknown) => String(m).replace(/\d+/g, '<n>');
        expect(norm(existing.body.error?.message), label).toBe(norm(missing.body.error?.message));
        expect(JSON.stringify(existing.body), label).not.toMatch(/secretTask|secret|Victim/);
      }
    });
  }
});
