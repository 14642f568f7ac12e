// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { passConditionalRequests } from '../helpers/happy-dom-fetch.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 18: a client needs a backend URL, and a page may configure it after recording analytics. Work queued
 * meanwhile fails with NOT_CONFIGURED, which is not a refusal of the backend: it is kept, and sent once a URL is
 * configured (before, the outbox dropped every ClientError).
 */
let backend: TestBackend;
beforeAll(async () => {
  backend = await startTestBackend();
});
afterAll(() => backend?.close());

it('keeps events recorded before a backend URL is configured, and sends them once it is', async () => {
  const { appId, apiToken } = backend.server.bootstrap;
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  // configure() revalidates the actions list (If-None-Match): happy-dom needs the helper for the 304.
  const client = createClient({ appId, authToken: apiToken, logger: quiet, fetch: passConditionalRequests(globalThis.fetch) });
  const label = `before-url-${Date.now()}`;
  client.App.Analytics.pageView(label);
  // No URL: nothing can be sent, and nothing is dropped.
  await client.App.Analytics.flush().catch(() => undefined);
  // A new URL for each read: happy-dom's fetch caches GET answers.
  let reads = 0;
  const stored = async () =>
    ((await backend.api('GET', `/v1/apps/${appId}/analytics?type=pageView&limit=100&read=${++reads}`)).body.events as { data: { label?: string } }[]).filter(
      (e) => e.data.label === label,
    );
  expect(await stored()).toHaveLength(0);
  // configure() sends what waited for a URL by itself.
  client.configure({ baseUrl: backend.url });
  let found = await stored();
  for (let waited = 0; found.length === 0 && waited < 10_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    found = await stored();
  }
  expect(found).toHaveLength(1);
});
