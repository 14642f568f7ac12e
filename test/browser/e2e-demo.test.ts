import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { collectPageErrors, launchChromium, screenshot } from '../helpers/browser.js';
import { createClient, type Client } from '../../src/index.js';
// @ts-expect-error plain ESM helper shared with `npm start`
import { startDemo } from '../../demo/serve.mjs';

interface Demo {
  server: {
    url: string;
    bootstrap: { appId: number; organizationId: number; apiToken: string; studioToken: string };
    close(): Promise<void>;
    tick(): Promise<void>;
  };
}

/**
 * The demo app of `npm start`, driven in Chromium as a person would. Needs `npm run build` (dist/).
 * The backend runs on a clock the test can move forward (scheduled action).
 */
describe('demo app end to end (Chromium)', () => {
  let demo: Demo;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let page: Page;
  let errors: string[] = [];
  let api: Client;
  let shift = 0;

  const action = (name: string) => `.action[data-name="${name}"]`;

  async function open(): Promise<Page> {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    errors = collectPageErrors(page);
    await page.goto(demo.server.url + '/');
    await page.waitForSelector('body[data-ready]');
    await page.waitForSelector('#status[data-state="ok"]');
    expect(await page.textContent('#status')).toBe('Connected');
    return page;
  }

  async function book(p: Page, booking: { name: string; date: string; seats: number; email?: string }) {
    await p.fill('#booking-name', booking.name);
    if (booking.email !== undefined) await p.fill('#booking-email', booking.email);
    await p.fill('#booking-date', booking.date);
    await p.fill('#booking-seats', String(booking.seats));
    await p.click('#booking-submit');
    await p.waitForSelector('#booking-status[data-state="ok"], #booking-status[data-state="error"]', { timeout: 20_000 });
    return (await p.textContent('#booking-status'))!;
  }

  async function bookingsEntries() {
    const ds = await api.DataSources.connect('Bookings');
    return (await ds.find({ limit: 1000 })) as { data: Record<string, unknown> }[];
  }

  beforeAll(async () => {
    if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npm run build first');
    demo = await startDemo({ memory: true, log: false, clock: () => Date.now() + shift });
    const { appId, apiToken } = demo.server.bootstrap;
    api = createClient({ baseUrl: demo.server.url, appId, authToken: apiToken });
    browser = await launchChromium();
  });
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page) await screenshot(page, `e2e-${ctx.task.name}`);
    await context?.close();
    context = undefined;
  });
  afterAll(async () => {
    await browser?.close();
    await demo?.server.close();
  });

  it('opens the screen: connection, empty bookings, the three seeded actions with their publication state and schedule', async () => {
    const p = await open();
    expect(await p.textContent('#app-id')).toBe(String(demo.server.bootstrap.appId));
    expect(await p.textContent('#bookings-rows')).toContain('No bookings yet');
    expect(await p.textContent('#badge')).toBe('0');
    await p.waitForSelector(action('bookings-summary'));
    const cards = await p.$$eval('.action', (els) =>
      els.map((e) => ({
        name: e.querySelector('.action-name')!.textContent,
        env: e.querySelector('.action-env')!.textContent,
        published: e.querySelector('.action-published')!.textContent,
        next: e.querySelector('.action-next')!.textContent,
        debug: (e.querySelector('.action-debug') as HTMLAnchorElement).href,
      })),
    );
    expect(cards.map((c) => [c.name, c.env, c.published])).toEqual([
      ['validate-booking', 'client', 'published'],
      ['notify-booker', 'server', 'published'],
      ['bookings-summary', 'server', 'published'],
    ]);
    // Only the scheduled action has a next run; every card links to its debug compile page.
    expect(cards.map((c) => c.next !== '—')).toEqual([false, false, true]);
    for (const c of cards) expect(c.debug).toMatch(/\/v1\/apps\/\d+\/tasks\/\d+\/compile\?html&token=/);
    expect(errors).toEqual([]);
  });

  it('submits a booking: the client action validates it in the sandbox and inserts it, and the list updates', async () => {
    const p = await open();
    const status = await book(p, { name: 'Ann Lee', date: '2030-05-01', seats: 3 });
    expect(status).toContain('Booked: Ann Lee');
    await p.waitForSelector('#bookings-rows tr.booking-row:has-text("Ann Lee")');
    expect(await p.textContent('#page-info')).toBe('1–1 of 1');
    const stored = await bookingsEntries();
    expect(stored.map((e) => e.data)).toEqual([{ name: 'Ann Lee', email: 'ann@example.com', date: '2030-05-01', seats: 3, status: 'confirmed' }]);
    // The run was recorded by the device and uploaded (it is a client action).
    const { logs } = await api.App.Actions.getLogs({ where: { type: 'app.action.completed' } });
    expect(logs.some((l) => l.data.source === 'device')).toBe(true);
    expect(errors).toEqual([]);
  });

  it('refuses an invalid booking with the sandbox validation message and stores nothing', async () => {
    const p = await open();
    const before = (await bookingsEntries()).length;
    const status = await book(p, { name: '', date: '2030-05-02', seats: 12 });
    expect(status).toContain('Not booked: Invalid booking: name is required');
    expect(status).toContain('seats must be a whole number from 1 to 8');
    expect((await bookingsEntries()).length).toBe(before);
  });

  it('lists bookings newest first, five per page', async () => {
    const ds = await api.DataSources.connect('Bookings');
    for (let i = 1; i <= 6; i++) await ds.insert({ name: `Guest ${i}`, email: `guest${i}@example.com`, date: '2030-06-0' + i, seats: 1, status: 'confirmed' });
    const p = await open();
    const names = () => p.$$eval('#bookings-rows tr.booking-row td:first-child', (tds) => tds.map((td) => td.textContent));
    expect(await names()).toEqual(['Guest 6', 'Guest 5', 'Guest 4', 'Guest 3', 'Guest 2']);
    expect(await p.textContent('#page-info')).toBe('1–5 of 7');
    expect(await p.isDisabled('#page-prev')).toBe(true);
    await p.click('#page-next');
    await p.waitForSelector('#page-info:has-text("6–7 of 7")');
    expect(await names()).toEqual(['Guest 1', 'Ann Lee']);
    expect(await p.isDisabled('#page-next')).toBe(true);
    await p.click('#page-prev');
    await p.waitForSelector('#page-info:has-text("1–5 of 7")');
  });

  it("sees the log-triggered notification arrive in the booker's inbox, the badge change, and marks it read", async () => {
    const p = await open();
    // The guests' notifications are scoped to their own addresses: not in Ann's inbox.
    await p.waitForSelector('#notifications li.notification', { timeout: 10_000 });
    const firstCount = Number(await p.textContent('#badge'));
    expect(firstCount).toBe(1);
    expect(await p.textContent('#notifications')).not.toContain('Guest');

    expect(await book(p, { name: 'Ann Lee', date: '2030-07-14', seats: 2 })).toContain('Booked');
    // notify-booker runs on the server from the dataSource.entry.create log and publishes a scoped notification.
    await p.waitForFunction(() => document.getElementById('badge')!.textContent === '2', undefined, { timeout: 15_000 });
    // The list may render a poll after the badge (a loaded machine): wait for the new one at the top.
    await p.waitForFunction(() => document.querySelector('#notifications li.notification p')?.textContent?.includes('2 seat(s)'), undefined, {
      timeout: 15_000,
    });
    const newest = p.locator('#notifications li.notification').first();
    expect(await newest.locator('strong').textContent()).toBe('Booking confirmed');
    expect(await newest.locator('p').textContent()).toBe('Ann Lee, your booking of 2 seat(s) on 2030-07-14 is confirmed.');
    expect(await newest.getAttribute('class')).toContain('unread');

    await newest.locator('.mark-read').click();
    await p.waitForFunction(() => document.getElementById('badge')!.textContent === '1');
    expect(await p.locator('#notifications li.notification').first().getAttribute('class')).toContain('read');
    await p.click('#mark-all-read');
    await p.waitForFunction(() => document.getElementById('badge')!.dataset.count === '0');
    expect(await p.locator('#notifications li.unread').count()).toBe(0);

    // Another user of the app sees only their own notifications.
    await p.fill('#user-email', 'guest3@example.com');
    await p.click('#user-form button');
    await p.waitForFunction(() => document.querySelector('#notifications li p')?.textContent?.startsWith('Guest 3'));
    expect(await p.locator('#notifications li.notification').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('runs an action with "Run now" and shows its result, last run and logs', async () => {
    const p = await open();
    const card = p.locator(action('bookings-summary'));
    await card.waitFor();
    await card.locator('.action-run-now').click();
    await card.locator('.action-result[data-state="ok"]').waitFor({ timeout: 15_000 });
    const result = JSON.parse((await card.locator('.result-value').textContent())!);
    expect(result).toMatchObject({ bookings: 8, seats: 1 * 6 + 3 + 2, trigger: 'manual' });
    await p.waitForFunction((sel) => document.querySelector(`${sel} .action-last`)!.textContent !== '—', action('bookings-summary'));
    await card.locator('.action-logs-box summary').click();
    await card.locator('.action-logs li:has-text("app.action.completed")').first().waitFor();
    await p.waitForSelector('#summary-list li:has-text("8 booking(s), 11 seat(s) (manual)")');
  });

  it("shows a failed action's error and trace", async () => {
    const p = await open();
    const card = p.locator(action('notify-booker'));
    await card.waitFor();
    await card.locator('.action-run-now').click();
    await card.locator('.action-result[data-state="error"]').waitFor({ timeout: 15_000 });
    expect(await card.locator('.error-message').textContent()).toBe('FUNCTION_FAILED: notify-booker runs from its log trigger: create a booking to fire it');
    const rows = await card.locator('.trace tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    expect(rows).toEqual([
      ['functions[0]', 'com.client.function.script', 'failed', 'Error: notify-booker runs from its log trigger: create a booking to fire it'],
    ]);
    await card.locator('.action-logs-box summary').click();
    await card.locator('.action-logs li.failed').first().waitFor();

    // A client action fails on the device the same way (validation in the sandbox), with its trace.
    const validate = p.locator(action('validate-booking'));
    await validate.locator('.action-payload').fill('{"name":"X","email":"nope","date":"2030-01-01","seats":1}');
    await validate.locator('.action-run-now').click();
    await validate.locator('.action-result[data-state="error"]').waitFor({ timeout: 15_000 });
    expect(await validate.locator('.error-message').textContent()).toContain('Invalid booking: email must be an e-mail address');
    expect(await validate.locator('.trace tbody tr.failed td:first-child').textContent()).toBe('functions[0]');
  });

  it('shows only the error in the Run now box for a payload that is not JSON and when offline (no "null" text)', async () => {
    const p = await open();
    const card = p.locator(action('notify-booker'));
    await card.waitFor();
    await card.locator('.action-payload').fill('{bad');
    await card.locator('.action-run-now').click();
    await card.locator('.action-result[data-state="error"]').waitFor();
    const box = card.locator('.action-result');
    expect(await box.evaluate((b) => b.childNodes.length)).toBe(1);
    expect(await box.textContent()).toMatch(/^INVALID_PAYLOAD: The payload is not JSON: [\s\S]*\)$/);
    expect(await box.textContent()).not.toContain('null');

    await card.locator('.action-payload').fill('{}');
    await context!.setOffline(true);
    await card.locator('.action-run-now').click();
    await p.waitForFunction(
      (sel) =>
        document.querySelector(`${sel} .action-result`)!.getAttribute('data-state') === 'error' &&
        !document.querySelector(`${sel} .action-run-now`)!.hasAttribute('disabled'),
      action('notify-booker'),
    );
    const offline = (await box.textContent())!;
    await context!.setOffline(false);
    expect(offline.length).toBeGreaterThan(0);
    expect(offline).not.toContain('null');
    expect([...(await box.evaluate((b) => [...b.childNodes].map((n) => n.nodeName)))].every((n) => n !== '#text')).toBe(true);
  });

  it('fits the Bookings and trace tables in their boxes: no column is cut off at 1280 or 1024 px', async () => {
    const p = await open();
    await p.waitForSelector('.booking-row');
    const card = p.locator(action('notify-booker'));
    await card.locator('.action-run-now').click();
    await card.locator('.action-result[data-state="error"] .trace').waitFor({ timeout: 15_000 });
    for (const width of [1280, 1024]) {
      await p.setViewportSize({ width, height: 900 });
      const overflow = await p.evaluate(() =>
        [
          ['Bookings', document.querySelector('#bookings table')!, document.querySelector('#bookings')!],
          ['trace', document.querySelector('.trace')!, document.querySelector('.trace')!.closest('.action-result')!],
        ].map(([name, table, box]) => {
          const b = (box as Element).getBoundingClientRect();
          const inner = b.right - parseFloat(getComputedStyle(box as Element).paddingRight);
          const cut = [...(table as Element).querySelectorAll('th, td')].filter(
            (c) => c.scrollWidth > c.clientWidth || c.getBoundingClientRect().right > inner + 0.5,
          );
          return { name, cut: cut.map((c) => c.textContent), scrolls: (box as Element).scrollWidth > (box as Element).clientWidth };
        }),
      );
      expect(overflow, `at ${width} px`).toEqual([
        { name: 'Bookings', cut: [], scrolls: false },
        { name: 'trace', cut: [], scrolls: false },
      ]);
    }
    // The Created and Package cells wrap at their parts, their text unchanged.
    expect(await card.locator('.trace tbody td:nth-child(2)').textContent()).toBe('com.client.function.script');
  });

  it('does not scroll sideways on a 390 px phone screen: wide tables scroll inside their own box', async () => {
    const p = await open();
    const card = p.locator(action('notify-booker'));
    await card.locator('.action-run-now').click();
    await card.locator('.action-result[data-state="error"] .trace').waitFor({ timeout: 15_000 });
    await p.setViewportSize({ width: 390, height: 844 });
    const sideways = await p.evaluate(() => ({
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      // Elements whose right edge passes the screen's (inside a box that scrolls on its own is fine).
      out: [...document.querySelectorAll('body *')]
        .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
        .filter((el) => {
          for (let up = el.parentElement; up; up = up.parentElement) if (/(auto|scroll|hidden)/.test(getComputedStyle(up).overflowX)) return false;
          return true;
        })
        .map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className ? `.${String(el.className).split(' ')[0]}` : ''}`),
    }));
    expect(sideways).toEqual({ page: 0, out: [] });
    await screenshot(p, 'demo-390px');
  });

  it('opens the debug compile page from the actions panel and runs the pipeline', async () => {
    const p = await open();
    const card = p.locator(action('validate-booking'));
    await card.waitFor();
    await card.locator('.action-payload').fill('{"name":"Debby","email":"debby@example.com","date":"2030-08-01","seats":4}');
    const [debug] = await Promise.all([context!.waitForEvent('page'), card.locator('.action-debug').click()]);
    page = debug;
    const debugErrors = collectPageErrors(debug);
    const missing: string[] = [];
    debug.on('response', (r) => r.status() === 404 && missing.push(new URL(r.url()).pathname));
    await debug.waitForLoadState();
    await debug.click('#run');
    await debug.waitForSelector('#status.ok, #status.failed', { timeout: 20_000 });
    expect(await debug.textContent('#status')).toBe('succeeded');
    const result = JSON.parse((await debug.textContent('#result'))!);
    expect(result).toMatchObject({ data: { name: 'Debby', email: 'debby@example.com', seats: 4, status: 'confirmed' } });
    const rows = await debug.$$eval('#trace tbody tr', (trs) =>
      trs.map((tr) => [tr.children[0]!.textContent, tr.children[1]!.textContent, tr.children[3]!.textContent]),
    );
    expect(rows).toEqual([
      ['functions[0]', 'com.client.function.script', 'ok'],
      ['functions[1]', 'com.client.function.insert-entry', 'ok'],
      ['functions[2]', 'com.client.function.return', 'ok'],
    ]);
    expect((await bookingsEntries()).some((e) => e.data.name === 'Debby')).toBe(true);
    // Nothing is missing, not even the /favicon.ico Chromium asks for (204).
    expect(missing).toEqual([]);
    expect(debugErrors).toEqual([]);
  });

  it('the scheduled action writes a summary at the next minute and the panel shows its last and next run', async () => {
    const before = (await api.App.Actions.get()).find((a) => a.name === 'bookings-summary')!;
    expect(before.nextRunAt).not.toBeNull();
    shift += Math.max(0, Date.parse(before.nextRunAt!) - (Date.now() + shift)) + 1000;
    await demo.server.tick();
    const summaries = await api.DataSources.connect('Booking summaries');
    const deadline = Date.now() + 15_000;
    let scheduled: unknown[] = [];
    while (scheduled.length === 0 && Date.now() < deadline) {
      scheduled = await summaries.find({ where: { trigger: 'schedule' } });
      if (scheduled.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    // (Real time moves on too: a run of the real next minute may have happened as well.)
    expect(scheduled.length).toBeGreaterThanOrEqual(1);
    const p = await open();
    await p.waitForSelector('#summary-list li:has-text("(schedule)")');
    const after = (await api.App.Actions.get()).find((a) => a.name === 'bookings-summary')!;
    const step = Date.parse(after.nextRunAt!) - Date.parse(before.nextRunAt!);
    expect(step).toBeGreaterThanOrEqual(60_000);
    expect(step % 60_000).toBe(0);
    expect(Date.parse(after.lastRunAt!)).toBeGreaterThanOrEqual(Date.parse(before.nextRunAt!));
    const card = p.locator(action('bookings-summary'));
    expect(await card.locator('.action-next').textContent()).toBe(
      await p.evaluate((iso) => new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' }), after.nextRunAt!),
    );
    // One completed scheduled log per summary written. Real time moves on, so a run of the real next minute may
    // land between two reads: read both until they agree (a run writes its summary, then its log).
    const deadlineLogs = Date.now() + 15_000;
    let logs: Awaited<ReturnType<typeof api.App.Actions.getLogs>>['logs'] = [];
    for (;;) {
      logs = (await api.App.Actions.getLogs({ where: { type: 'app.task.completed' } })).logs;
      scheduled = await summaries.find({ where: { trigger: 'schedule' } });
      if (logs.length === scheduled.length || Date.now() > deadlineLogs) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(logs.length).toBe(scheduled.length);
    expect(logs.every((l) => l.data.mode === 'scheduled')).toBe(true);
  });
});

describe('demo seeding', () => {
  it('is idempotent: a restart on the same data folder creates nothing twice and keeps the data', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dataDir = mkdtempSync(join(tmpdir(), 'iar-demo-'));
    try {
      const first: Demo & { seeded: { actions: Record<string, { id: number }> } } = await startDemo({ dataDir, log: false });
      const { appId, apiToken } = first.server.bootstrap;
      const client = () => createClient({ baseUrl: first.server.url, appId, authToken: apiToken });
      await (await client().DataSources.connect('Bookings')).insert({ name: 'Kept', email: 'kept@example.com', date: '2030-01-01', seats: 1 });
      const ids = Object.fromEntries(Object.entries(first.seeded.actions).map(([k, a]) => [k, a.id]));
      await first.server.close();

      const second: Demo & { seeded: { actions: Record<string, { id: number }> } } = await startDemo({ dataDir, log: false });
      try {
        expect(second.server.bootstrap.apiToken).toBe(apiToken);
        const c = createClient({ baseUrl: second.server.url, appId, authToken: apiToken });
        const actions = await c.App.Actions.get();
        expect(actions.map((a) => a.name).sort()).toEqual(['bookings-summary', 'notify-booker', 'validate-booking']);
        expect(Object.fromEntries(actions.map((a) => [a.name, a.id]))).toEqual(ids);
        expect(actions.every((a) => a.published)).toBe(true);
        const names = (await c.DataSources.get()).map((d) => d.name).sort();
        expect(names).toEqual(['Booking summaries', 'Bookings']);
        const bookings = await (await c.DataSources.connect('Bookings')).find({});
        expect(bookings.map((e) => e.data.name)).toEqual(['Kept']);
      } finally {
        await second.server.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
