#!/usr/bin/env node
/**
 * Writes the README's screenshots of the debug compile page (docs/images/debug-page*.png) from a real backend
 * (dist/server.mjs, in memory) and Debian's Chromium: run `npm run build` first, then
 * `node scripts/debug-page-screenshots.mjs`.
 *
 * - debug-page.png: the execution view after a run whose loop body failed on one item: the tree with the
 *   failed node, its detail opened, the result, the run history and the curl command.
 * - debug-page-in-page.png: the same page in "debug in page" mode (studio token), with the named page scripts
 *   DevTools lists and a loop node's iterations opened.
 */
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { startServer } from '../dist/server.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const server = await startServer({ port: 0, memory: true, log: false });
const { appId, apiToken, studioToken } = server.bootstrap;
const api = async (method, path, token, json) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'Auth-token': token, 'Content-Type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
};

await api('POST', `/v1/apps/${appId}/tasks/functions`, studioToken, {
  package: 'com.acme.function.price',
  environment: 'any',
  code: `(settings, context) => {
  if (!(settings.quantity > 0)) throw new RangeError('quantity must be positive, got ' + settings.quantity);
  return { line: settings.quantity * settings.unitPrice };
}`,
});
const { action } = await api('POST', `/v1/apps/${appId}/tasks`, apiToken, {
  name: 'order-total',
  environment: 'any',
  functions: [
    { functionPackage: 'com.client.function.set', settings: { total: 0 } },
    {
      type: 'loop',
      items: 'lines',
      functions: [
        { functionPackage: 'com.acme.function.price', settings: { quantity: '{{ currentItem.qty }}', unitPrice: '{{ currentItem.price }}' } },
        { functionPackage: 'com.client.function.script', settings: { code: 'return { total: context.total + context.line };' } },
      ],
    },
    {
      type: 'if',
      conditions: [{ condition: 'total > 100', functions: [{ functionPackage: 'com.client.function.set', settings: { shipping: 0 } }] }],
      elseFunctions: [{ functionPackage: 'com.client.function.set', settings: { shipping: 5 } }],
    },
    { functionPackage: 'com.client.function.return', settings: { value: '{{ total + shipping }}' } },
  ],
});

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
mkdirSync('docs/images', { recursive: true });
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, deviceScaleFactor: 1 });
  const open = async (token, payload, extra = '') => {
    await page.goto(
      `${server.url}/v1/apps/${appId}/tasks/${action.id}/compile?html&token=${token}&payload=${encodeURIComponent(JSON.stringify(payload))}${extra}`,
    );
    await page.waitForFunction(() => typeof window.Client?.App?.Actions?.Pipeline?.run === 'function');
  };
  const run = async () => {
    await page.click('#run');
    await page.waitForSelector('#status.ok, #status.failed', { timeout: 30_000 });
  };
  const shot = async (file) => {
    // The view down to the curl command (the trace table and the pipeline JSON below it are left out).
    const bottom = await page.$eval('#curl', (e) => e.getBoundingClientRect().bottom + window.scrollY + 60);
    await page.$eval('#payload', (e) => (e.scrollTop = 0));
    await page.screenshot({ path: `docs/images/${file}`, fullPage: true, clip: { x: 0, y: 0, width: 1200, height: Math.ceil(bottom) } });
    console.log(`wrote docs/images/${file}`);
  };

  await open(apiToken, {
    lines: [
      { qty: 2, price: 30 },
      { qty: 1, price: 45 },
    ],
  });
  await run();
  await page.fill(
    '#payload',
    JSON.stringify(
      {
        lines: [
          { qty: 2, price: 30 },
          { qty: 0, price: 12 },
          { qty: 1, price: 45 },
        ],
      },
      null,
      2,
    ),
  );
  await run();
  await page.click('button.node[data-path="functions[1].functions[0]"]');
  await shot('debug-page.png');

  await open(
    studioToken,
    {
      lines: [
        { qty: 2, price: 30 },
        { qty: 1, price: 45 },
        { qty: 3, price: 10 },
      ],
    },
    '&debugInPage=1',
  );
  await run();
  await page.click('button.node[data-path="functions[1].functions[1]"]');
  await shot('debug-page-in-page.png');
} finally {
  await browser.close();
  await server.close();
}
