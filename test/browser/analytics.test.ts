import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { collectPageErrors, launchChromium, screenshot } from '../helpers/browser.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** Needs `npx rollup -c` (dist/client.js). Screens load the script-tag build from the real backend. */
describe('analytics-triggered actions in Chromium', () => {
  let b: TestBackend;
  let browser: Browser;
  /** Whether this build can run pipelines on the device (the engine's browser loader). */
  let engineError: string | undefined;
  const ids: Record<string, number> = {};

  const screen = (pageId: number, body = '', attrs = '') =>
    `<!doctype html><html><head><title>Screen ${pageId}</title>
     <script src="/dist/client.js" data-base-url="/" data-app-id="${b.server.bootstrap.appId}" data-auth-token="${b.server.bootstrap.apiToken}" data-page-id="${pageId}" ${attrs}></script>
     </head><body>${body}</body></html>`;

  async function open(path: string, html: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage();
    const errors = collectPageErrors(page);
    await page.route(`**${path}`, (route) => route.fulfill({ contentType: 'text/html', body: html }));
    await page.goto(b.url + path);
    return { page, errors };
  }

  async function entries(name: string, settle = 0): Promise<{ data: Record<string, unknown> }[]> {
    const ds = await b.client.DataSources.connect(name);
    const end = Date.now() + 15_000;
    for (;;) {
      const found = (await ds.find({})) as { data: Record<string, unknown> }[];
      if ((found.length > 0 && settle === 0) || Date.now() > end) return found;
      if (settle > 0) {
        await new Promise((r) => setTimeout(r, settle));
        return (await ds.find({})) as { data: Record<string, unknown> }[];
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npx rollup -c first');
    b = await startTestBackend({ static: { mounts: { '/dist/': 'dist' } } });
    browser = await launchChromium();
    await b.studio.DataSources.create({ name: 'visits' });
    await b.studio.DataSources.create({ name: 'submissions' });
    const onView = await b.studio.App.Actions.create({
      name: 'on-view-77',
      environment: 'client',
      triggers: [{ trigger: 'analytics', where: { type: 'analytics.pageView', data: { _pageId: 77 } } }],
      functions: [
        {
          functionPackage: 'com.client.function.insert-entry',
          settings: {
            dataSourceName: 'visits',
            data: {
              page: '{{ event.data._pageId }}',
              title: '{{ event.data._pageTitle }}',
              trigger: '{{ trigger }}',
              session: '{{ event.data._analyticsSessionId }}',
            },
          },
        },
      ],
    });
    const onSubmit = await b.studio.App.Actions.create({
      name: 'on-submit',
      environment: 'any',
      // A $regex in the where: the device matches it with RE2 from the lazy query chunk (issue 14).
      triggers: [{ trigger: 'analytics', where: { type: 'analytics.event', data: { category: 'form', action: { $regex: '^su(b|bm)+it$' } } } }],
      functions: [
        {
          functionPackage: 'com.client.function.insert-entry',
          settings: { dataSourceName: 'submissions', data: { form: '{{ event.data.formId }}', page: '{{ event.data._pageId }}' } },
        },
      ],
    });
    const probe = await b.studio.App.Actions.create({
      name: 'engine-probe',
      environment: 'client',
      functions: [{ functionPackage: 'com.client.function.return', settings: { value: 1 } }],
    });
    for (const a of [onView, onSubmit, probe]) await b.studio.App.Actions.publish(a.id, true);
    Object.assign(ids, { onView: onView.id, onSubmit: onSubmit.id });
    const { page } = await open('/probe.html', screen(1, '', 'data-auto-page-view="false"'));
    engineError = await page.evaluate(() =>
      (window as any).Client.App.Actions.runWithResult('engine-probe').then(
        () => undefined,
        (e: Error) => e.message,
      ),
    );
    await page.close();
  });

  /** The device run logs of an action, once uploaded. */
  async function deviceLogs(actionId: number, atLeast: number, waitMs = 15_000) {
    const end = Date.now() + waitMs;
    for (;;) {
      const { logs } = await b.client.App.Actions.getLogs({ id: actionId, where: { 'data.source': 'device' } });
      if (logs.length >= atLeast || Date.now() > end) return logs;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  afterAll(async () => {
    await browser?.close();
    await b?.close();
  });

  it("a screen's automatic page view runs the matching client action, which writes to a data source", async () => {
    const { page, errors } = await open('/screen-77.html', screen(77));
    try {
      // The page view ran the action on the device: one run, logged there and uploaded.
      const runs = await deviceLogs(ids.onView!, 1);
      expect(runs).toHaveLength(1);
      expect(runs[0]!.data).toMatchObject({ mode: 'on-demand', trigger: 'analytics', actionId: ids.onView });
      expect(engineError, 'device pipeline runs must work in this build').toBeUndefined();
      const visits = await entries('visits');
      expect(visits).toHaveLength(1);
      expect(visits[0]!.data).toMatchObject({ page: 77, title: 'Screen 77', trigger: 'analytics' });
      expect(visits[0]!.data.session).toMatch(/^[0-9a-f-]{36}$/);
      // The page view itself reached the backend as an analytics record.
      await page.evaluate(() => (window as any).Client.App.Analytics.flush());
      const { body } = await b.api('GET', `/v1/apps/${b.server.bootstrap.appId}/analytics?type=pageView`);
      expect(body.events.some((e: any) => e.data._pageId === 77 && e.data._pageTitle === 'Screen 77')).toBe(true);
      expect(runs[0]!.type).toBe('app.action.completed');
      expect(errors).toEqual([]);
    } catch (error) {
      await screenshot(page, 'analytics-page-view');
      throw error;
    } finally {
      await page.close();
    }
  });

  it('a page view of another page, or with automatic page views off, runs nothing', async () => {
    const other = await open('/screen-78.html', screen(78));
    const off = await open('/screen-77-off.html', screen(77, '', 'data-auto-page-view="false"'));
    try {
      await other.page.evaluate(() => (window as any).Client.App.Analytics.idle());
      await off.page.waitForTimeout(1000);
      // Still only the run of the first test.
      expect(await deviceLogs(ids.onView!, 2, 1500)).toHaveLength(1);
      if (!engineError) expect(await entries('visits', 500)).toHaveLength(1);
    } finally {
      await other.page.close();
      await off.page.close();
    }
  });

  it('a form submit fires the analytics.event action', async () => {
    const { page, errors } = await open(
      '/screen-form.html',
      screen(
        5,
        `<form id="signup" onsubmit="event.preventDefault(); document.body.dataset.sent = 'yes'"><input name="email" value="a@b.c"><button id="go">Sign up</button></form>`,
        'data-auto-page-view="false"',
      ),
    );
    try {
      await page.click('#go');
      await page.waitForSelector('body[data-sent="yes"]');
      const runs = await deviceLogs(ids.onSubmit!, 1);
      expect(runs.map((r) => r.data.trigger)).toEqual(['analytics']);
      expect(engineError, 'device pipeline runs must work in this build').toBeUndefined();
      const submissions = await entries('submissions');
      expect(submissions.map((s) => s.data)).toEqual([{ form: 'signup', page: 5 }]);
      expect(errors).toEqual([]);
    } catch (error) {
      await screenshot(page, 'analytics-form-submit');
      throw error;
    } finally {
      await page.close();
    }
  });
});
