#!/usr/bin/env node
// Takes the README screenshots (docs/images/demo.png, docs/images/debug-page.png) with Playwright in
// Debian's Chromium, on a fresh in-memory demo. Run after `npm run build`: `node demo/screenshots.mjs`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startDemo } from './serve.mjs';

const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'docs/images');
mkdirSync(out, { recursive: true });

const { server } = await startDemo({ memory: true, log: false, timezone: 'Europe/Dublin' });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, timezoneId: 'Europe/Dublin', locale: 'en-IE' });
  const page = await context.newPage();
  await page.goto(server.url + '/');
  await page.waitForSelector('body[data-ready]');
  await page.waitForSelector('#status[data-state="ok"]');
  for (const [name, date, seats] of [
    ['Ann Lee', '2030-05-01', 2],
    ['Ann Lee', '2030-05-14', 4],
  ]) {
    await page.fill('#booking-name', name);
    await page.fill('#booking-date', date);
    await page.fill('#booking-seats', String(seats));
    await page.click('#booking-submit');
    await page.waitForSelector('#booking-status[data-state="ok"]');
  }
  await page.waitForFunction(() => document.getElementById('badge').textContent === '2', undefined, { timeout: 15_000 });
  await page.locator('#notifications .mark-read').last().click();
  await page.waitForFunction(() => document.getElementById('badge').textContent === '1');
  const summary = page.locator('.action[data-name="bookings-summary"]');
  await summary.locator('.action-run-now').click();
  await summary.locator('.action-result[data-state="ok"]').waitFor();
  await summary.locator('.action-logs-box summary').click();
  const notify = page.locator('.action[data-name="notify-booker"]');
  await notify.locator('.action-run-now').click();
  await notify.locator('.action-result[data-state="error"]').waitFor();
  await page.screenshot({ path: join(out, 'demo.png'), fullPage: true });

  const validate = page.locator('.action[data-name="validate-booking"]');
  await validate.locator('.action-payload').fill('{"name":"Bo","email":"bo@example.com","date":"2030-06-01","seats":3}');
  const [debug] = await Promise.all([context.waitForEvent('page'), validate.locator('.action-debug').click()]);
  await debug.setViewportSize({ width: 1100, height: 760 });
  await debug.waitForLoadState();
  await debug.click('#run');
  await debug.waitForSelector('#status.ok, #status.failed');
  await debug.screenshot({ path: join(out, 'debug-page.png'), fullPage: false });
  console.log(`screenshots written to ${out}`);
} finally {
  await browser.close();
  await server.close();
}
