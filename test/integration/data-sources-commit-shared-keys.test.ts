import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTRY_CACHE_CASES, startTestBackend, type TestBackend } from '../helpers/server.js';

/**
 * Issue 16 (review): an Idempotency-Key sent without a token, or with a page's client token that every visitor
 * holds, was one key space for all those callers: one visitor's key blocked another's commit (409), and a repeat
 * of another's body replayed that visitor's answer. Such callers' keys are also keyed by the body now.
 */
describe.each(ENTRY_CACHE_CASES)('data sources: Idempotency-Key of callers who share an identity (entry cache $cache)', ({ entryCacheEntries }) => {
  let b: TestBackend;
  let ds: number;
  beforeAll(async () => {
    b = await startTestBackend({ limits: { entryCacheEntries } });
    const x = b.server.bootstrap;
    ds = (
      await b.api('POST', `/v1/data-sources?appId=${x.appId}`, {
        token: x.studioToken,
        json: { name: 'Guestbook', accessRules: [{ type: ['select', 'insert'], allow: 'all' }] },
      })
    ).body.dataSource.id;
  });
  afterAll(() => b?.close());

  const commit = (token: string | null, key: string, text: string) =>
    b.api('POST', `/v1/data-sources/${ds}/commit`, { token, headers: { 'Idempotency-Key': key }, json: { append: true, entries: [{ data: { text } }] } });
  const texts = async () =>
    (
      (await b.api('POST', `/v1/data-sources/${ds}/data/query`, { token: b.server.bootstrap.studioToken, json: {} })).body.entries as {
        data: { text: string };
      }[]
    )
      .map((e) => e.data.text)
      .sort();

  for (const [who, token] of [
    ['without a token', () => null],
    ['with the client token', () => b.server.bootstrap.clientToken],
  ] as [string, () => string | null][]) {
    it(`${who}: two visitors with the same key and different bodies both commit; a repeat applies once`, async () => {
      const before = (await texts()).length;
      const first = await commit(token(), 'k-1', `${who}: a`);
      const second = await commit(token(), 'k-1', `${who}: b`);
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.headers.get('Idempotent-Replayed')).toBeNull();
      const again = await commit(token(), 'k-1', `${who}: a`);
      expect(again.status).toBe(200);
      expect(again.headers.get('Idempotent-Replayed')).toBe('true');
      expect((await texts()).length).toBe(before + 2);
    });
  }

  it('an API token still gets 409 for a reused key with another body', async () => {
    expect((await commit(b.server.bootstrap.apiToken, 'k-2', 'api: a')).status).toBe(200);
    const reused = await commit(b.server.bootstrap.apiToken, 'k-2', 'api: b');
    expect(reused.status).toBe(409);
    expect(reused.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });
});
