/**
 * Screen-targeted actions (spec run rules 1-4): only the screen's JavaScript
 * is loaded into the sandbox, with a `Client` whose `Page.onRemoteExecution`
 * records the handler; the handler gets the payload and its return value is
 * the run's result.
 */
import type { FunctionPackageSource } from '../../contract/pipeline.js';
import type { Queryable } from '../db/database.js';
import { getPage } from './pages-store.js';

export const screenPackage = (pageId: number) => `com.client.function.screen-${pageId}`;

/** The custom function that runs a screen's script and calls its registered handler. */
export function screenFunction(pageId: number, script: string): FunctionPackageSource {
  const code = `async (settings, context) => {
  let handler;
  const Page = {
    onRemoteExecution(fn) {
      if (typeof fn !== 'function') throw new TypeError('Client.Page.onRemoteExecution() needs a function');
      handler = fn;
    },
  };
  const ScreenClient = typeof Client === 'undefined' ? { Page } : Object.assign(Object.create(Client), { Page });
  await (async function (Client) {
${script}
  })(ScreenClient);
  if (!handler) throw new Error('Screen ${pageId} did not register a handler with Client.Page.onRemoteExecution()');
  return await handler(context.payload || {}, context);
}`;
  return { package: screenPackage(pageId), name: `Screen ${pageId}`, code };
}

/**
 * The screen version a run uses: published for live and scheduled runs, the
 * working script for viewer runs. Throws a clear error when there is none.
 */
export async function loadScreenScript(db: Queryable, appId: number, pageId: number, version: 'live' | 'viewer'): Promise<string> {
  const page = await getPage(db, appId, pageId);
  if (!page) throw new Error(`Screen ${pageId} of app ${appId} does not exist`);
  if (version === 'viewer') return page.script;
  if (page.publishedScript === null) throw new Error(`Screen ${pageId} is not published; live and scheduled runs use the published screen only`);
  return page.publishedScript;
}
