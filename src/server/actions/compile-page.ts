/**
 * The debug compile page (`GET v1/apps/:appId/tasks/:taskId/compile?html`):
 * loads client.js, defines `window.ENV.taskPipeline`, registers each custom
 * function as its own named script (`//# sourceURL=`), and shows the execution
 * view of src/server/actions/debug-view.ts: payload editor, runs of
 * `Client.App.Actions.Pipeline.run()` (button or console) drawn on the pipeline
 * tree, run history, "copy as curl", and for studio tokens only "debug in page"
 * (`debugInPage=1` preselects it; an API token gets 403 STUDIO_ONLY), where script
 * nodes and custom functions run as page scripts so DevTools breakpoints stop.
 *
 * Hardening (docs/security.md, "Debug compile page"): `?token=` is exchanged at once for a 60-second ticket
 * (303 to the same URL with `ticket=` instead), the page embeds only its own 30-minute token of that app
 * (src/server/http/debug-tokens.ts), every URL comes from `ctx.publicUrl()` (never the Host header), and the
 * page is served with a nonce-based Content-Security-Policy, `Referrer-Policy: no-referrer`, no framing and
 * `Cache-Control: no-store`.
 */
import { randomBytes } from 'node:crypto';
import type { Context } from 'hono';
import type { AppEnv, ServerContext } from '../context.js';
import type { AppRecord, TokenRecord } from '../store/identity.js';
import { intParam, requireAuth, requireKind } from '../http/auth.js';
import { issuePageToken, issueTicket, mayOpenDebugPage, redeemTicket } from '../http/debug-tokens.js';
import { HttpError } from '../http/errors.js';
import { loadApp } from '../routes/apps.js';
import { findToken } from '../store/identity.js';
import { listCustomFunctions } from '../store/functions.js';
import { getPage } from './pages-store.js';
import { screenFunction } from './screens.js';
import { requireAction } from './service.js';
import type { ActionDefinition } from '../../contract/actions.js';
import type { ActionRow } from './store.js';
import { debugView, type DebugViewConfig } from './debug-view.js';

/** Run timeout of "debug in page" runs: time paused in the debugger counts, so it is the page token's life. */
const IN_PAGE_TIMEOUT_MS = 30 * 60_000;

const PAGE_STYLE = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem 2rem; color: #222; }
  h1 small { color: #666; font-weight: normal; }
  h2 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
  code, pre, textarea { font: 13px ui-monospace, monospace; }
  pre { background: #f5f5f5; padding: .6rem .75rem; overflow: auto; max-height: 24rem; margin: .3rem 0; white-space: pre-wrap; word-break: break-word; }
  textarea { width: 100%; max-width: 48rem; box-sizing: border-box; display: block; }
  textarea[aria-invalid=true] { outline: 2px solid #b3261e; }
  #payload-error { color: #b3261e; min-height: 1.2em; margin: .2rem 0; }
  button { font: inherit; cursor: pointer; }
  #run { padding: .3rem 1.2rem; }
  #status.ok { color: #1b7f3a; } #status.failed { color: #b3261e; } #status.running { color: #8a6d00; }
  .warning { color: #b3261e; }
  .in-page-control small { display: block; color: #555; max-width: 48rem; }
  body.in-page .in-page-control { background: #fff4e5; padding: .4rem .6rem; border-left: 4px solid #e37400; }
  .hint { color: #555; }
  .columns { display: grid; grid-template-columns: minmax(18rem, 1fr) minmax(20rem, 1.3fr); gap: 1.5rem; align-items: start; }
  ul.tree { list-style: none; margin: 0; padding-left: 1.1rem; border-left: 1px dotted #bbb; }
  #tree > ul.tree { padding-left: 0; border-left: 0; }
  ul.tree li { margin: .15rem 0; }
  .branch { color: #555; font-size: 12px; margin: .2rem 0 0 .6rem; font-family: ui-monospace, monospace; }
  button.node { display: inline-flex; gap: .5rem; align-items: baseline; border: 1px solid #ccc; border-radius: 4px; background: #fff; padding: .15rem .5rem; text-align: left; }
  button.node .name { font-weight: 600; }
  button.node .note { color: #666; font-size: 12px; }
  button.node .badge { font-size: 12px; }
  button.node.st-ok { border-color: #1b7f3a; } button.node.st-ok .badge { color: #1b7f3a; }
  button.node.st-failed { border-color: #b3261e; background: #fdecea; } button.node.st-failed .badge { color: #b3261e; }
  button.node.st-skipped .badge, button.node.st-none .badge { color: #888; }
  button.node.st-retried { border-color: #8a6d00; }
  button.node.selected { outline: 2px solid #1a73e8; }
  #detail .entry { border-left: 3px solid #ccc; padding-left: .6rem; margin: .5rem 0; }
  #detail .entry.st-ok { border-color: #1b7f3a; } #detail .entry.st-failed { border-color: #b3261e; } #detail .entry.st-retried { border-color: #8a6d00; }
  #detail .head { font-weight: 600; } #detail .message { color: #b3261e; }
  #detail .label { color: #555; font-size: 12px; margin-top: .3rem; }
  #detail .truncated { color: #8a6d00; font-size: 12px; }
  #history { padding-left: 1.5rem; }
  #history button.run-item { display: flex; gap: .8rem; border: 0; background: none; padding: .1rem 0; text-align: left; }
  #history .ok .what { color: #1b7f3a; } #history .failed .what { color: #b3261e; }
  #history .payload { color: #555; }
  table { border-collapse: collapse; margin-top: .4rem; }
  th, td { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; }
  tr.failed td { background: #fdecea; } tr.skipped td { color: #888; }
`;

/** JSON safe inside a <script> element. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
const html = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
/** Code inside <script>: `<!--`, `<script` and `</script` (HTML's script data states) become `\x3C…`, the same text inside JS strings. */
const scriptText = (code: string) => code.replace(/<(?=!--|\/?script)/gi, '\\x3C');
/** A URL as a CSP source expression (`;` and `,` would end it). */
const cspSource = (url: string) => url.replace(/;/g, '%3B').replace(/,/g, '%2C');

/** Query parameters the page used to take and no longer does: refused, so nobody relies on them silently. */
const REMOVED_PARAMETERS = ['clientUrl'];

/** Headers of the page and of its redirect: no Referer, no caching of credentials, no framing, no sniffing. */
function setSecurityHeaders(c: Context<AppEnv>): void {
  c.header('Referrer-Policy', 'no-referrer');
  c.header('Cache-Control', 'no-store');
  c.header('X-Frame-Options', 'DENY');
  c.header('X-Content-Type-Options', 'nosniff');
}

/**
 * The page's Content-Security-Policy: scripts only from the runtime's own `dist/` folder and the page's inline
 * scripts carrying this response's nonce; workers from `dist/` or a blob (client.js starts a cross-origin
 * engine through one); wasm compilation for QuickJS; requests only to the backend.
 */
export function compilePageCsp(publicUrl: string, nonce: string): string {
  const dist = cspSource(`${publicUrl}/dist/`);
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' ${dist} 'wasm-unsafe-eval'`,
    `worker-src ${dist} blob:`,
    `connect-src ${cspSource(`${publicUrl}/`)}`,
    `style-src 'nonce-${nonce}'`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * `GET …/tasks/:id/compile`: with `?token=` (or the `Auth-token` header plus a leftover `token=`) a 303 to the
 * same URL with a ticket instead of the token; with a ticket or the `Auth-token` header, the page.
 */
export async function compilePage(ctx: ServerContext, c: Context<AppEnv>): Promise<Response> {
  for (const name of REMOVED_PARAMETERS)
    if (c.req.query(name) !== undefined)
      throw new HttpError(400, 'UNSUPPORTED_PARAMETER', `Query "${name}" is not supported: the page loads client.js from this server's dist/ folder`);
  const token = c.req.query('token');
  const ticket = c.req.query('ticket');
  if (ticket !== undefined) {
    const opener = await redeemTicket(ctx, ticket, intParam(c, 'appId'), intParam(c, 'id'));
    if (!opener)
      throw new HttpError(401, 'INVALID_TICKET', 'The ticket query parameter is unknown, expired or for another page: open the page again with ?token=');
    c.set('auth', opener);
  } else if (token && !c.req.header('Auth-token')) {
    const found = await findToken(ctx.db, token);
    if (!found) throw new HttpError(401, 'INVALID_TOKEN', 'The token query parameter holds an unknown token');
    c.set('auth', found);
  }
  requireKind(c, ['api', 'studio'], 'open the debug compile page');
  const app = await loadApp(ctx, c);
  const auth = requireAuth(c);
  if (!mayOpenDebugPage(auth))
    throw new HttpError(403, 'DEBUG_PAGE_REFUSED', "A debug page's own token opens no debug page: open it with an API or studio token");
  const action = await requireAction(ctx, app.id, String(intParam(c, 'id')));
  const input = pageInput(c, action);
  if (token !== undefined) return redirectWithTicket(ctx, c, auth, app, action);
  return compilePageHtml(ctx, c, app, action, { ...input, auth, pageToken: await issuePageToken(ctx, auth, app.id) });
}

interface PageInput {
  environment: 'live' | 'viewer';
  /** `debugInPage=1`: the page opens in "debug in page" mode (studio tokens only). */
  inPage: boolean;
  definition: ActionDefinition;
  rawPayload: string;
}

function pageInput(c: Context<AppEnv>, action: ActionRow): PageInput {
  const environment = c.req.query('environment') ?? 'viewer';
  if (environment !== 'live' && environment !== 'viewer') throw new HttpError(400, 'INVALID_PARAMETER', 'Query "environment" must be live or viewer');
  const definition = environment === 'live' ? action.published : action.working;
  if (!definition) throw new HttpError(422, 'ACTION_NOT_PUBLISHED', `Action "${action.name}" is not published; open the page with environment=viewer`);
  const rawPayload = c.req.query('payload') ?? '{}';
  try {
    JSON.parse(rawPayload);
  } catch {
    throw new HttpError(400, 'INVALID_PARAMETER', 'Query "payload" must be JSON');
  }
  const flag = c.req.query('debugInPage');
  if (flag !== undefined && flag !== '' && flag !== '0' && flag !== '1') throw new HttpError(400, 'INVALID_PARAMETER', 'Query "debugInPage" must be 1 or 0');
  const inPage = flag === '' || flag === '1';
  if (inPage && requireAuth(c).kind !== 'studio')
    throw new HttpError(403, 'STUDIO_ONLY', "Debug in page runs the pipeline's code unsandboxed in the page: only studio tokens may open it (debugInPage)");
  return { environment, definition, rawPayload, inPage };
}

/** 303 to the page's public URL with the same query, `token` replaced by a ticket. */
async function redirectWithTicket(ctx: ServerContext, c: Context<AppEnv>, auth: TokenRecord, app: AppRecord, action: ActionRow): Promise<Response> {
  const query: string[] = [];
  for (const [name, value] of new URL(c.req.url).searchParams) {
    if (name === 'token' || name === 'ticket') continue;
    query.push(value === '' ? encodeURIComponent(name) : `${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  }
  query.push(`ticket=${encodeURIComponent(await issueTicket(ctx, auth, app.id, action.id))}`);
  setSecurityHeaders(c);
  return c.redirect(`${ctx.publicUrl()}/v1/apps/${app.id}/tasks/${action.id}/compile?${query.join('&')}`, 303);
}

async function compilePageHtml(
  ctx: ServerContext,
  c: Context<AppEnv>,
  app: AppRecord,
  action: ActionRow,
  { environment, definition, rawPayload, inPage, auth, pageToken }: PageInput & { auth: TokenRecord; pageToken: string },
): Promise<Response> {
  const publicUrl = ctx.publicUrl();
  const clientUrl = `${publicUrl}/dist/client.js`;
  const nonce = randomBytes(18).toString('base64');

  // Custom functions: a screen-targeted action's screen script, else the app's stored custom functions
  // (those a device may run; server-only ones too for studio tokens, whose developers debug them here).
  const custom: { package: string; code: string; environment?: string }[] = [];
  if (definition.pageId) {
    const page = await getPage(ctx.db, app.id, definition.pageId);
    const script = environment === 'live' ? page?.publishedScript : page?.script;
    if (script != null) custom.push(screenFunction(definition.pageId, script));
  } else {
    const studio = auth.kind === 'studio';
    for (const f of await listCustomFunctions(ctx.db, app.id)) if (studio || f.environment !== 'server') custom.push(f);
  }
  const functions = definition.pageId && custom.length ? [{ functionPackage: custom[0]!.package }] : definition.functions;
  const env = { taskPipeline: functions, taskId: action.id, taskName: action.name, appId: app.id, environment };

  // One named script per function (DevTools lists it under custom-functions/); registering it on the
  // page's client makes Pipeline.run() use it (in the sandbox). Package names are [A-Za-z0-9._-] only (PACKAGE_PATTERN).
  const customScripts = custom
    .map(
      (f) => `<script nonce="${nonce}">
// Custom function ${f.package}${f.environment ? ` (environment ${f.environment})` : ''}: registered for sandboxed runs (QuickJS, where
// DevTools breakpoints do not stop); "Debug in page" (studio tokens) runs it as pipeline/custom/${f.package}.js instead.
Client.Functions.register(${scriptJson(f.package)}, (${scriptText(f.code)}
));
//# sourceURL=custom-functions/${f.package}.js
</script>`,
    )
    .join('\n');

  const view: DebugViewConfig = {
    publicUrl,
    clientUrl,
    appId: app.id,
    taskId: action.id,
    environment,
    runsOn: definition.environment ?? 'any',
    payload: rawPayload,
    inPage:
      auth.kind === 'studio' ? { functions: custom.map((f) => ({ package: f.package, code: f.code })), on: inPage, runTimeoutMs: IN_PAGE_TIMEOUT_MS } : null,
  };
  const inPageControl =
    view.inPage === null
      ? ''
      : `<p class="in-page-control"><label><input type="checkbox" id="in-page"> Debug in page <strong class="warning">(not sandboxed)</strong></label>
<small>Script nodes and custom functions run as scripts of this page, so DevTools breakpoints and <code>debugger</code> statements stop in them; everything else runs as in the sandbox. Not sandboxed: the code has this page's powers and no memory or CPU cap. <span id="in-page-scripts"></span></small></p>`;

  const body = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Debug: ${html(action.name)}</title>
<style nonce="${nonce}">${PAGE_STYLE}</style>
</head>
<body>
<header><h1>Action “${html(action.name)}” <small>#${action.id} · ${html(environment)}</small></h1></header>
<main>
<section class="controls">
<label for="payload">Payload (JSON object)</label>
<textarea id="payload" spellcheck="false" rows="6" aria-describedby="payload-error"></textarea>
<p id="payload-error" role="alert"></p>
<p><button id="run" type="button">Run</button> <span id="status">not run yet</span><span id="status-detail"></span></p>
${inPageControl}
<p class="hint">Or run it from the console: <code>Client.App.Actions.Pipeline.run()</code> (the editor's payload unless you pass one).</p>
</section>
<div class="columns">
<section><h2>Pipeline</h2><div id="tree"></div></section>
<section><h2>Node</h2><div id="detail"><p class="summary">Click a node to see its outcome, duration, input and output.</p></div></section>
</div>
<section><h2>Result</h2><pre id="result">(not run yet)</pre></section>
<section><h2>Runs in this page session</h2><ol id="history"></ol></section>
<section><h2>Run it against the backend</h2>
<p><button id="copy-curl" type="button">Copy as curl</button> <span id="curl-note"></span></p>
<pre id="curl"></pre>
<p class="hint">The command does not contain a token: set <code>TOKEN</code> to an API or studio token of this app first (<code>export TOKEN=…</code>).</p>
</section>
<section><h2>Trace</h2>
<table id="trace"><thead><tr><th>Node</th><th>Package</th><th>Duration (ms)</th><th>Outcome</th><th>Message</th><th>Iteration</th></tr></thead><tbody></tbody></table></section>
<details><summary>Pipeline JSON</summary><pre id="pipeline"></pre></details>
</main>
<script nonce="${nonce}">
// The ticket that opened the page leaves the address bar (and so the history and any later Referer).
(function () { try { var u = new URL(location.href); if (u.searchParams.has('ticket') || u.searchParams.has('token')) { u.searchParams.delete('ticket'); u.searchParams.delete('token'); history.replaceState(history.state, '', u.href); } } catch (e) {} })();
window.ENV = Object.assign(window.ENV || {}, ${scriptJson(env)});</script>
<script nonce="${nonce}" src="${html(clientUrl)}" data-base-url="${html(publicUrl)}" data-app-id="${app.id}" data-auth-token="${html(pageToken)}" data-environment="${environment}" data-auto-page-view="false" data-track-forms="false"></script>
${customScripts}
<script nonce="${nonce}">
document.getElementById('pipeline').textContent = JSON.stringify(window.ENV.taskPipeline, null, 2);
(${debugView.toString()})(${scriptJson(view)});
</script>
</body>
</html>`;
  setSecurityHeaders(c);
  c.header('Content-Security-Policy', compilePageCsp(publicUrl, nonce));
  return c.html(body);
}
