import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * getLogs over many records (issue 14's "no tenant can slow down another"): a `where` reads every record of the app
 * for its count, so it runs under the query time budget (limits.aggregateTimeoutMs, here 1 ms: past it 422
 * QUERY_TIMEOUT, as data source queries), while a page without `where` (SQL: its rows and a count) is not bounded by it.
 */
let b: TestBackend;
let appId: number;
const RECORDS = 5000;

beforeAll(async () => {
  b = await startTestBackend({ limits: { aggregateTimeoutMs: 1 } });
  appId = b.server.bootstrap.appId;
  const action = await b.client.App.Actions.create({ name: 'many', environment: 'client', functions: [] });
  const trace = Array.from({ length: 8 }, (_, i) => ({ functionName: 'set', output: { i, text: 'x'.repeat(100) } }));
  const at = Date.parse('2026-03-01T00:00:00Z');
  for (let from = 0; from < RECORDS; from += 500) {
    const logs = Array.from({ length: 500 }, (_, i) => ({
      deviceKey: `device-run-${from + i}`,
      type: 'app.action.completed',
      createdAt: new Date(at + (from + i) * 1000).toISOString(),
      data: { mode: 'on-demand', duration: 1, actionId: action.id, result: from + i, trace },
    }));
    const r = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { logs } });
    expect(r.status).toBe(201);
  }
}, 120_000);
afterAll(() => b?.close());

describe('getLogs over many records', () => {
  it('a page without where answers its rows, newest first, and the count of all', async () => {
    const page = await b.client.App.Actions.getLogs({ limit: 3 });
    expect(page.count).toBe(RECORDS);
    expect(page.logs.map((l) => l.data.result)).toEqual([RECORDS - 1, RECORDS - 2, RECORDS - 3]);
  });

  it('a where that reads past the time budget answers 422 QUERY_TIMEOUT', async () => {
    const r = await b.api('POST', `/v1/apps/${appId}/tasks/logs`, { json: { where: { 'data.result': -1 } } });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('QUERY_TIMEOUT');
    expect(r.body.error.message).toMatch(/limits\.aggregateTimeoutMs/);
    // The backend goes on: the next plain read answers.
    expect((await b.client.App.Actions.getLogs({ limit: 1 })).count).toBe(RECORDS);
  });
});
