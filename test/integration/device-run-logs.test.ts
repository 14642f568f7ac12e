import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/index.js';
import { localDbName } from '../../src/storage/client-store.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * Device run logs are written behind the runs (src/storage/run-logs.ts): `runWithResult` resolves once the record is
 * handed to the writer, and records of runs that end while a write is under way go in one transaction. Through the
 * public API, with the real engine, fake-indexeddb and the real backend: whatever reads the records right after the
 * runs (Client.status, getRun, close, the next page load, getLogs) sees every one of them.
 */
const F = (name: string) => `com.client.function.${name}`;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

let b: TestBackend;
let appId: number;
/** Upload requests fail (no network for them): the records stay on the device until a client with a working fetch comes. */
let uploads = false;
const noUploads: typeof fetch = (input, init) =>
  !uploads && String(input instanceof Request ? input.url : input).includes('/tasks/logs') && (init?.method ?? 'GET') === 'POST'
    ? Promise.reject(new TypeError('fetch failed'))
    : fetch(input, init);
const page = (): Client =>
  createClient({ logger: quiet, baseUrl: b.url, appId, authToken: b.server.bootstrap.apiToken, fetch: noUploads, limits: { runsPerMinute: 100_000 } });

async function stored(): Promise<{ deviceKey: string; data: { result: unknown } }[]> {
  const db = await openDB(localDbName(appId));
  try {
    return await db.getAll('runLogs');
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  b = await startTestBackend();
  appId = b.server.bootstrap.appId;
  const action = await b.client.App.Actions.create({
    name: 'double',
    environment: 'client',
    functions: [{ functionPackage: F('return'), settings: { value: '{{ n * 2 }}' } }],
  });
  await b.client.App.Actions.publish(action.id, true);
  const pair = await b.client.App.Actions.create({
    name: 'pair',
    environment: 'client',
    functions: [{ functionPackage: F('return'), settings: { value: '{{ { n } }}' } }],
  });
  await b.client.App.Actions.publish(pair.id, true);
  // Busy for 300 ms in the engine: long enough for the page to reconfigure while it runs.
  const slow = await b.client.App.Actions.create({
    name: 'slow',
    environment: 'client',
    functions: [{ functionPackage: F('script'), settings: { code: 'const end = Date.now() + 300; while (Date.now() < end); return "done";' } }],
  });
  await b.client.App.Actions.publish(slow.id, true);
});
afterAll(() => b?.close());

describe('device run logs written behind the runs', () => {
  it('every record of runs one after another and in flight is seen right after them, kept by close, uploaded by getLogs', async () => {
    const client = page();
    const results: unknown[] = [];
    for (let n = 0; n < 10; n++) results.push(await client.App.Actions.runWithResult('double', { n }));
    results.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => client.App.Actions.runWithResult('double', { n: 10 + i })))));
    expect(results).toEqual(Array.from({ length: 20 }, (_, n) => n * 2));
    // Right after the last result: the status counts all 20 (it waits for the writes handed over before it).
    expect((await client.status()).logUploads).toBe(20);
    const handle = await client.App.Actions.run('double', { n: 100 });
    // In progress until its record is stored, then completed from the record.
    const run = await eventually(async () => {
      const r = await client.App.Actions.getRun(handle.runId);
      return r.status === 'completed' && r;
    });
    expect(run.result).toBe(200);
    await client.close();
    const records = await stored();
    expect(records.map((r) => r.data.result).sort((x, y) => Number(x) - Number(y))).toEqual([...results, 200]);
    expect(new Set(records.map((r) => r.deviceKey)).size).toBe(21);

    // The next page load, with uploads working: getLogs uploads the pending records first, then reads them back.
    uploads = true;
    const next = page();
    const logs = await next.App.Actions.getLogs({ limit: 100 });
    expect(logs.logs.filter((l) => records.some((r) => r.deviceKey === l.deviceKey))).toHaveLength(21);
    expect((await next.status()).logUploads).toBe(0);
    await next.close();
  });

  it("the record is the run's result as it was: what the page does with the result afterwards is not stored", async () => {
    uploads = false;
    const client = page();
    const result = await client.App.Actions.runWithResult<Record<string, unknown>>('pair', { n: 7 });
    // Changed at once, before the record's write could have run: a secret, and a value no store can copy.
    result.secret = 'typed by the user';
    result.fn = () => 1;
    expect((await client.status()).logUploads).toBe(1);
    await client.close();
    const records = await stored();
    expect(records.map((r) => r.data.result)).toEqual([{ n: 7 }]);
    uploads = true;
    const next = page();
    expect((await next.App.Actions.getLogs({ limit: 1 })).logs[0]?.data.result).toEqual({ n: 7 });
    await next.close();
  });

  it('the record goes to the app the run started in, when the page switches apps while it runs', async () => {
    uploads = false;
    const other = await b.server.createOrganization('device-logs-other');
    const client = page();
    const handle = await client.App.Actions.run('slow');
    expect(handle.status).toBe('running');
    client.configure({ appId: other.appId, authToken: other.apiToken });
    const mine = <T extends { deviceKey: string }>(records: T[]) => records.filter((r) => r.deviceKey === handle.runId);
    const [record] = await eventually(async () => {
      const found = mine(await stored());
      return found.length === 1 && found;
    }, 30_000);
    expect(record!.data.result).toBe('done');
    await client.close();
    // Nothing of it in the other app's store (made by the switch, or not at all).
    const names = (await indexedDB.databases()).map((d) => d.name);
    if (names.includes(localDbName(other.appId))) {
      const db = await openDB(localDbName(other.appId));
      try {
        expect(db.objectStoreNames.contains('runLogs') ? mine(await db.getAll('runLogs')) : []).toEqual([]);
      } finally {
        db.close();
      }
    }
    // The next page load of the first app uploads it to that app.
    uploads = true;
    const next = page();
    expect((await next.App.Actions.getLogs({ limit: 10 })).logs.filter((l) => l.deviceKey === handle.runId)).toHaveLength(1);
    await next.close();
  });
});
