import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { collectPageErrors, launchChromium, onPage } from '../helpers/browser.js';
import { startTestBackend, type TestBackend } from '../helpers/server.js';

/** The debug compile page as an execution view (issue 18, item 3). Needs `npm run build` (dist/client.js). */
describe('debug compile page: execution view', () => {
  let b: TestBackend;
  let browser: Browser;
  beforeAll(async () => {
    if (!existsSync('dist/client.js')) throw new Error('dist/client.js is missing: run npm run build first');
    b = await startTestBackend({ static: { mounts: { '/dist/': 'dist' } } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await b?.close();
  });

  const open = async (page: Page, actionId: number, payload: unknown, token = b.server.bootstrap.apiToken) => {
    await page.goto(
      `${b.url}/v1/apps/${b.server.bootstrap.appId}/tasks/${actionId}/compile?html&token=${token}&payload=${encodeURIComponent(JSON.stringify(payload))}`,
    );
    await page.waitForFunction(() => typeof (window as any).Client?.App?.Actions?.Pipeline?.run === 'function');
  };
  const runAndWait = async (page: Page) => {
    await page.click('#run');
    await page.waitForSelector('#status.ok, #status.failed', { timeout: 15_000 });
    return page.textContent('#status');
  };
  const nodeState = (page: Page, path: string) =>
    page.$eval(`button.node[data-path="${path}"]`, (b) => [/st-(\w+)/.exec(b.className)![1], b.querySelector('.badge')!.textContent]);

  const functions = [
    { functionPackage: 'com.client.function.set', settings: { total: '{{ a + b }}' } },
    { type: 'loop', items: 'list', functions: [{ functionPackage: 'com.client.function.script', settings: { code: 'return { last: currentItem * 2 }' } }] },
    {
      type: 'if',
      conditions: [{ condition: 'total > 100', functions: [{ functionPackage: 'com.client.function.return', settings: { value: 'big' } }] }],
      elseFunctions: [
        {
          functionPackage: 'com.client.function.script',
          settings: { code: 'if (context.total === 13) throw new TypeError("unlucky <img src=x onerror=window.__xss=1>"); return { fine: true }' },
        },
      ],
    },
    { functionPackage: 'com.client.function.return', settings: { value: '{{ [total, last] }}' } },
  ];

  it('edits and validates the payload, runs and re-runs without reloading, draws the tree with outcomes, details, history and curl', async () => {
    const action = await b.client.App.Actions.create({ name: 'view', environment: 'any', functions: functions as never });
    const page = await browser.newPage();
    const errors = collectPageErrors(page);
    await onPage(page, 'debug-view', async () => {
      await open(page, action.id, { a: 2, b: 3, list: [1, 2, 3] });
      await page.evaluate(() => ((window as any).__sameDocument = true));
      // The tree: every node, nested, none run yet.
      expect(await page.$$eval('button.node', (bs) => bs.map((b) => (b as HTMLElement).dataset.path))).toEqual([
        'functions[0]',
        'functions[1]',
        'functions[1].functions[0]',
        'functions[2]',
        'functions[2].conditions[0].functions[0]',
        'functions[2].elseFunctions[0]',
        'functions[3]',
      ]);
      expect(await page.textContent('#tree')).toContain('when total > 100');

      // The payload editor validates as you type: a clear message, Run disabled.
      expect(JSON.parse(await page.inputValue('#payload'))).toEqual({ a: 2, b: 3, list: [1, 2, 3] });
      await page.fill('#payload', '{"a": 2,');
      expect(await page.textContent('#payload-error')).toMatch(/^Not valid JSON: /);
      expect(await page.isDisabled('#run')).toBe(true);
      await page.fill('#payload', '[1, 2]');
      expect(await page.textContent('#payload-error')).toBe('The payload must be a JSON object ({ … })');
      expect(await page.isDisabled('#run')).toBe(true);
      await page.fill('#payload', '{"a": 2, "b": 3, "list": [1, 2, 3]}');
      expect(await page.textContent('#payload-error')).toBe('');
      expect(await page.isDisabled('#run')).toBe(false);

      expect(await runAndWait(page)).toBe('succeeded');
      expect(JSON.parse((await page.textContent('#result'))!)).toEqual([5, 6]);
      expect(await nodeState(page, 'functions[0]')).toEqual(['ok', expect.stringMatching(/^ok · [\d.]+ ms$/)]);
      expect(await nodeState(page, 'functions[1].functions[0]')).toEqual(['ok', expect.stringMatching(/^ok ×3 · /)]);
      expect(await nodeState(page, 'functions[2].conditions[0].functions[0]')).toEqual(['none', 'not run']);
      // A loop body's detail lists its iterations.
      await page.click('button.node[data-path="functions[1].functions[0]"]');
      expect(await page.textContent('#detail .iterations')).toBe('Ran in 3 iteration entries: 0, 1, 2');
      expect(await page.$$eval('#detail .entry .head', (hs) => hs.map((h) => h.textContent!.split(' · ').slice(0, 2).join(' · ')))).toEqual([
        'iteration 0 · ok',
        'iteration 1 · ok',
        'iteration 2 · ok',
      ]);

      // Real trace values: a node's evaluated settings and what it returned, per iteration.
      const values = () =>
        page.$$eval('#detail .entry .value', (vs) => vs.map((v) => [v.children[0]!.textContent, JSON.parse(v.lastElementChild!.textContent!)]));
      expect((await values()).slice(0, 2)).toEqual([
        ['Input (evaluated settings)', { code: 'return { last: currentItem * 2 }' }],
        ['Output', { last: 2 }],
      ]);
      await page.click('button.node[data-path="functions[0]"]');
      expect(await values()).toEqual([
        ['Input (evaluated settings)', { total: 5 }],
        ['Output', { total: 5 }],
      ]);

      // Re-run with another payload, in the same document: the else branch fails.
      await page.fill('#payload', '{"a": 6, "b": 7, "list": []}');
      expect(await runAndWait(page)).toBe('failed');
      expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
      expect(await nodeState(page, 'functions[2].elseFunctions[0]')).toEqual(['failed', expect.stringMatching(/^failed · /)]);
      expect(await nodeState(page, 'functions[2]')).toEqual(['failed', expect.stringMatching(/^failed/)]);
      expect(await nodeState(page, 'functions[1].functions[0]')).toEqual(['none', 'not run']);
      expect(await nodeState(page, 'functions[3]')).toEqual(['none', 'not run']);
      await page.click('button.node[data-path="functions[3]"]');
      expect(await page.textContent('#detail .summary')).toBe('Never ran in this run.');
      await page.click('button.node[data-path="functions[2].elseFunctions[0]"]');
      expect(await page.textContent('#detail .message')).toBe('TypeError: unlucky <img src=x onerror=window.__xss=1>');
      expect(await page.textContent('#status-detail')).toContain('unlucky <img src=x');

      // This page session's runs: newest first; a click shows that run again with its payload.
      const items = await page.$$eval('#history button', (bs) => bs.map((b) => [b.querySelector('.mode')!.textContent, b.querySelector('.what')!.textContent]));
      expect(items).toEqual([
        ['sandbox', 'failed · FUNCTION_FAILED'],
        ['sandbox', expect.stringMatching(/^ok · /)],
      ]);
      await page.click('#history li:nth-child(2) button');
      expect(JSON.parse((await page.textContent('#result'))!)).toEqual([5, 6]);
      expect(JSON.parse(await page.inputValue('#payload'))).toEqual({ a: 2, b: 3, list: [1, 2, 3] });
      expect(
        JSON.parse((await page.evaluate(() => sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith('iar-debug-runs:'))!)))!).length,
      ).toBe(2);

      // Copy as curl: the REST call of this action with this payload, with $TOKEN instead of any token.
      const curl = (await page.textContent('#curl'))!;
      expect(curl).toContain(`'${b.url}/v1/apps/${b.server.bootstrap.appId}/tasks/${action.id}/run'`);
      expect(curl).toContain('-H "Auth-token: $TOKEN"');
      expect(curl).not.toMatch(/iar_[a-z]+_/);
      expect(curl).not.toContain(b.server.bootstrap.apiToken);
      // It runs as it is, in a shell, once TOKEN is set (the page never prints it). (Async: the backend runs in this process.)
      const { stdout } = await promisify(execFile)('bash', ['-c', curl], { env: { ...process.env, TOKEN: b.server.bootstrap.apiToken }, timeout: 60_000 });
      const answer = JSON.parse(stdout);
      expect(answer, stdout).toMatchObject({ status: 'succeeded', result: [5, 6] });

      expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
      expect(errors).toEqual([]);
    });
  });

  it('escapes what it renders: names, conditions, messages, results and trace values never become HTML', async () => {
    const evil = '<img src=x onerror="window.__xss=1"><b class="evil">b</b>';
    const nameEvil = '<img src=x onerror="window.__xss=1"><b class="evil">b'; // action names take no slash
    const action = await b.client.App.Actions.create({
      name: `evil ${nameEvil}`,
      environment: 'client',
      functions: [
        { type: 'loop', items: 'list', functions: [] },
        { type: 'if', conditions: [{ condition: `"${evil.replace(/"/g, "'")}" !== 1`, functions: [] }] },
        { functionPackage: 'com.client.function.log', settings: { message: evil } },
        {
          functionPackage: 'com.client.function.script',
          settings: { code: `context.x = ${JSON.stringify(evil)}; throw new Error(${JSON.stringify(evil)})` },
          continueOnError: true,
        },
        { functionPackage: 'com.client.function.return', settings: { value: { html: evil } } },
      ] as never,
    });
    const page = await browser.newPage();
    await onPage(page, 'debug-view-escape', async () => {
      await open(page, action.id, { list: [evil] });
      expect(await runAndWait(page)).toBe('succeeded');
      await page.click('button.node[data-path="functions[2]"]');
      expect(await page.textContent('#detail .logs')).toBe(evil);
      await page.click('button.node[data-path="functions[3]"]');
      expect(await page.textContent('#detail .message')).toBe(`Error: ${evil}`);
      expect(JSON.parse((await page.textContent('#result'))!)).toEqual({ html: evil });
      expect(await page.textContent('h1')).toContain(nameEvil);
      expect(await page.title()).toBe(`Debug: evil ${nameEvil}`);
      expect(await page.$$eval('img, b.evil', (els) => els.length)).toBe(0);
      expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
    });
  });

  it('shows trace input and output, a truncated value as its preview with a note', async () => {
    const action = await b.client.App.Actions.create({
      name: 'view-values',
      environment: 'client',
      functions: [{ functionPackage: 'com.client.function.set', settings: { a: 1 } }],
    });
    const page = await browser.newPage();
    await onPage(page, 'debug-view-values', async () => {
      // A run of this page session as the view stores it, with entries carrying input and output (src/contract/pipeline.ts).
      const stored = [
        {
          at: '12:00:00',
          payload: '{}',
          mode: 'sandbox',
          outcome: {
            ok: true,
            result: { a: 1 },
            durationMs: 3,
            trace: [
              {
                path: 'functions[0]',
                package: 'com.client.function.set',
                durationMs: 1.5,
                startMs: 0.25,
                retries: 1,
                outcome: 'ok',
                input: { a: '<i>1</i>' },
                output: { $truncated: true, length: 9000, preview: '{"a":"xxxx' },
              },
            ],
          },
        },
      ];
      await page.addInitScript(
        ([key, value]) => {
          if (location.pathname.endsWith('/compile')) sessionStorage.setItem(key!, value!);
        },
        [`iar-debug-runs:${b.server.bootstrap.appId}:${action.id}`, JSON.stringify(stored)],
      );
      await open(page, action.id, {});
      await page.click('button.node[data-path="functions[0]"]');
      expect(await page.textContent('#detail .entry .head')).toBe('ok · 1.5 ms · started at 0.25 ms · 1 retry');
      const values = await page.$$eval('#detail .entry .value', (vs) => vs.map((v) => [...v.children].map((c) => c.textContent)));
      expect(values).toEqual([
        ['Input (evaluated settings)', JSON.stringify({ a: '<i>1</i>' }, null, 2)],
        ['Output', 'Truncated: 9000 characters of JSON, the first 10 shown', '{"a":"xxxx'],
      ]);
      expect(await page.$$eval('#detail i', (els) => els.length)).toBe(0);
    });
  });
});
