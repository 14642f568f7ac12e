import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Debian's Chromium, headless, with the flags this closed network needs. Never a downloaded browser. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (done by .ci/run)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

/** Saves a screenshot under test-results/ (call it from a failing test's cleanup). */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync('test-results', { recursive: true });
  const path = `test-results/${name.replace(/[^a-z0-9-]+/gi, '_')}.png`;
  await page.screenshot({ path, fullPage: true }).catch(() => undefined);
  return path;
}

/** Collects console errors and uncaught page errors, to assert a page ran cleanly. */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/** Runs `body` on `page`, saves a screenshot when it fails (then rethrows), and closes the page either way. */
export async function onPage<T>(page: Page, name: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    await screenshot(page, name);
    throw error;
  } finally {
    await page.close();
  }
}
