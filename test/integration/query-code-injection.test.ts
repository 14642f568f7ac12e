/**
 * Every place that takes a caller's query must refuse code-running operators: sift's default export would
 * compile a `$where` string with `new Function` in the backend's own realm.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileFilter as safeTester } from '../../src/filter/tester.js';
import { compilePartialFilter as compileWhere } from '../../src/filter/partial.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const FLAG = '__iar_injected__';
const payload = `globalThis.${FLAG} = true; return true`;

describe('code-running operators are refused everywhere', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startTestBackend();
  });
  afterAll(() => backend.close());

  it('the filter module and the partial-document compiler refuse $where at any depth', () => {
    expect(() => safeTester({ $where: payload })).toThrow(/\$where is not allowed/);
    expect(() => safeTester({ $or: [{ a: 1 }, { $where: payload }] })).toThrow(/\$or\[1\]\.\$where: operator \$where is not allowed/);
    expect(() => safeTester({ a: { $elemMatch: { $where: payload } } })).toThrow(/not allowed/);
    expect(() => compileWhere({ data: { x: { $not: { $where: payload } } } })).toThrow(/not allowed/);
    expect(() => safeTester({ a: { $bogus: 1 } })).toThrow();
    expect(safeTester({ a: { $in: [1, 2] } })({ a: 2 })).toBe(true);
    expect((globalThis as Record<string, unknown>)[FLAG]).toBeUndefined();
  });

  it('a logical operator without a list is a 400 naming it, not an inner error', async () => {
    expect(() => safeTester({ $and: 5 })).toThrow('where.$and must be a non-empty array of queries');
    const res = await backend.api('POST', `/v1/apps/${backend.server.bootstrap.appId}/tasks/logs`, { json: { where: { $and: 5 } } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('where.$and must be a non-empty array of queries');
  });

  it('getLogs where (server route) answers 400 and runs nothing', async () => {
    const { appId } = backend.server.bootstrap;
    const res = await backend.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { where: { $where: payload } } });
    expect(res.status).toBe(400);
    const nested = await backend.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { where: { $or: [{ $where: payload }] } } });
    expect(nested.status).toBe(400);
    expect((globalThis as Record<string, unknown>)[FLAG]).toBeUndefined();
  });

  it('a log trigger where with $where is refused at create', async () => {
    const res = await backend.api('POST', `/v1/apps/${backend.server.bootstrap.appId}/tasks`, {
      json: { name: 'inject', environment: 'server', triggers: [{ trigger: 'log', where: { $where: payload } }], functions: [] },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('triggers[0].where');
  });

  it('notification list where and scope refuse $where', async () => {
    const { appId } = backend.server.bootstrap;
    const res = await backend.api('POST', `/v1/apps/${appId}/notifications`, { json: { where: { $where: payload } } });
    expect(res.status).toBe(400);
    // A notification's scope is a query matched against users: one with $where is refused at create.
    const scoped = await backend.api('PUT', `/v1/apps/${appId}/notifications`, { json: { data: { a: 1 }, scope: { email: { $where: payload } } } });
    expect(scoped.status).toBe(400);
    const listed = await backend.api('POST', `/v1/apps/${appId}/notifications`, {
      token: backend.server.bootstrap.studioToken,
      json: { user: { email: 'x@example.com' } },
    });
    expect(listed.body.notifications).toEqual([]);
    expect((globalThis as Record<string, unknown>)[FLAG]).toBeUndefined();
  });
});
