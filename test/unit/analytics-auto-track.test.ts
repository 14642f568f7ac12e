// @vitest-environment happy-dom
import 'fake-indexeddb/auto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formSubmitData, readAutoTrackOptions, startAutoTracking } from '../../src/analytics/auto-track.js';
import { createClient } from '../../src/index.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe('script-tag automatic tracking', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await startTestBackend();
  });
  afterAll(() => backend?.close());

  it('reads data-auto-page-view and data-track-forms (on unless turned off)', () => {
    const tag = (attrs: Record<string, string>) => {
      const el = document.createElement('script');
      for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
      return el;
    };
    expect(readAutoTrackOptions(null)).toEqual({ pageView: true, forms: true });
    expect(readAutoTrackOptions(tag({}))).toEqual({ pageView: true, forms: true });
    expect(readAutoTrackOptions(tag({ 'data-auto-page-view': 'false', 'data-track-forms': 'true' }))).toEqual({ pageView: false, forms: true });
    expect(readAutoTrackOptions(tag({ 'data-auto-page-view': 'yes', 'data-track-forms': 'off' }))).toEqual({ pageView: true, forms: false });
  });

  it('describes a submitted form by its names, never its field values', () => {
    document.body.innerHTML = `<form id="signup" name="signup-form"><input name="email" value="secret@example.com"></form><form></form>`;
    const [named, bare] = [...document.querySelectorAll('form')] as HTMLFormElement[];
    expect(formSubmitData(named!)).toEqual({ category: 'form', action: 'submit', label: 'signup-form', formId: 'signup', formName: 'signup-form' });
    expect(formSubmitData(bare!)).toEqual({ category: 'form', action: 'submit' });
    named!.setAttribute('data-analytics-label', 'Sign up');
    expect(formSubmitData(named!).label).toBe('Sign up');
  });

  it('records a page view once the screen has loaded and a form/submit event per submission', async () => {
    const marker = `p${Math.random()}`;
    document.title = marker;
    document.body.innerHTML = `<form id="order"><button>Go</button></form>`;
    const client = createClient({
      baseUrl: backend.url,
      appId: backend.server.bootstrap.appId,
      authToken: backend.server.bootstrap.apiToken,
      pageId: 12,
      logger: quiet,
    });
    startAutoTracking(client, { pageView: true, forms: true });
    await new Promise((r) => setTimeout(r, 20));
    document.querySelector('form')!.dispatchEvent(new Event('submit', { bubbles: true, cancelable: true }));
    await client.App.Analytics.flush();
    const { body } = await backend.api('GET', `/v1/apps/${backend.server.bootstrap.appId}/analytics?limit=1000`);
    const mine = (body.events as { type: string; data: Record<string, unknown> }[]).filter((e) => e.data._pageTitle === marker).reverse();
    expect(mine.map((e) => e.type)).toEqual(['analytics.pageView', 'analytics.event']);
    expect(mine[0]!.data._pageId).toBe(12);
    expect(mine[1]!.data).toMatchObject({ category: 'form', action: 'submit', formId: 'order', label: 'order' });
  });

  it('records nothing when turned off, or while no app is configured', async () => {
    const seen: string[] = [];
    const fake = {
      config: { appId: 1 as number | undefined },
      App: { Analytics: { pageView: () => void seen.push('view'), event: () => void seen.push('event') } as never },
    };
    startAutoTracking(fake, { pageView: false, forms: false });
    document.body.innerHTML = `<form></form>`;
    document.querySelector('form')!.dispatchEvent(new Event('submit', { bubbles: true }));
    await new Promise((r) => setTimeout(r, 10));
    expect(seen).toEqual([]);
    fake.config.appId = undefined;
    startAutoTracking(fake, { pageView: true, forms: true });
    document.querySelector('form')!.dispatchEvent(new Event('submit', { bubbles: true }));
    await new Promise((r) => setTimeout(r, 10));
    expect(seen).toEqual([]);
  });
});
