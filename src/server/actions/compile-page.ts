/**
 * The debug compile page (`GET v1/apps/:appId/tasks/:taskId/compile?html`):
 * loads client.js, defines `window.ENV.taskPipeline`, loads each custom
 * function as its own named script (`//# sourceURL=`) so DevTools can break in
 * it, and runs `Client.App.Actions.Pipeline.run()` from a button or the console,
 * rendering the result and the per-node trace.
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
import type { ActionDefinition } from '../../actions/types.js';
import type { ActionRow } from './store.js';

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
  return { environment, definition, rawPayload };
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
  { environment, definition, rawPayload, auth, pageToken }: PageInput & { auth: TokenRecord; pageToken: string },
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
  // page's client makes Pipeline.run() use it. Package names are [A-Za-z0-9._-] only (PACKAGE_PATTERN).
  const customScripts = custom
    .map(
      (f) => `<script nonce="${nonce}">
// Custom function ${f.package}${f.environment ? ` (environment ${f.environment})` : ''}: set breakpoints here in DevTools.
Client.Functions.register(${scriptJson(f.package)}, (${scriptText(f.code)}
));
//# sourceURL=custom-functions/${f.package}.js
</script>`,
    )
    .join('\n');

  const body = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Debug: ${html(action.name)}</title>
<style nonce="${nonce}">
  body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #222; }
  code, pre { font: 13px ui-monospace, monospace; }
  pre { background: #f5f5f5; padding: .75rem; overflow: auto; max-height: 24rem; }
  table { border-collapse: collapse; margin-top: 1rem; }
  th, td { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; }
  tr.failed td { background: #fdecea; } tr.skipped td { color: #888; }
  #status.ok { color: #1b7f3a; } #status.failed { color: #b3261e; }
</style>
</head>
<body>
<h1>Action “${html(action.name)}” <small>#${action.id} · ${html(environment)}</small></h1>
<p>Payload (query <code>payload</code>): <code id="payload">${html(rawPayload)}</code></p>
<p><button id="run" type="button">Run</button> or type <code>Client.App.Actions.Pipeline.run()</code> in the console. <span id="status"></span></p>
<h2>Result</h2>
<pre id="result">(not run yet)</pre>
<h2>Trace</h2>
<table id="trace"><thead><tr><th>Node</th><th>Package</th><th>Duration (ms)</th><th>Outcome</th><th>Message</th></tr></thead><tbody></tbody></table>
<h2>Pipeline</h2>
<pre id="pipeline"></pre>
<script nonce="${nonce}">
// The ticket that opened the page leaves the address bar (and so the history and any later Referer).
(function () { try { var u = new URL(location.href); if (u.searchParams.has('ticket') || u.searchParams.has('token')) { u.searchParams.delete('ticket'); u.searchParams.delete('token'); history.replaceState(history.state, '', u.href); } } catch (e) {} })();
window.ENV = Object.assign(window.ENV || {}, ${scriptJson(env)});</script>
<script nonce="${nonce}" src="${html(clientUrl)}" data-base-url="${html(publicUrl)}" data-app-id="${app.id}" data-auth-token="${html(pageToken)}" data-environment="${environment}" data-auto-page-view="false" data-track-forms="false"></script>
${customScripts}
<script nonce="${nonce}">
(function () {
  var $ = function (id) { return document.getElementById(id); };
  $('pipeline').textContent = JSON.stringify(window.ENV.taskPipeline, null, 2);
  function render(outcome) {
    var tbody = $('trace').tBodies[0];
    tbody.innerHTML = '';
    var ok = outcome && outcome.ok !== false && !outcome.error;
    $('status').textContent = ok ? 'succeeded' : 'failed';
    $('status').className = ok ? 'ok' : 'failed';
    var shown = outcome && 'result' in outcome ? outcome.result : outcome && outcome.error ? outcome.error : outcome;
    $('result').textContent = JSON.stringify(shown, null, 2);
    var trace = (outcome && (outcome.trace || (outcome.error && outcome.error.trace))) || [];
    trace.forEach(function (t) {
      var tr = document.createElement('tr');
      tr.className = t.outcome;
      [t.path, t.package, t.durationMs, t.outcome, t.message || ''].forEach(function (v) {
        var td = document.createElement('td');
        td.textContent = String(v);
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }
  var pipeline = window.Client && window.Client.App && window.Client.App.Actions && window.Client.App.Actions.Pipeline;
  if (!pipeline || typeof pipeline.run !== 'function') {
    $('status').textContent = 'client.js did not load (see ' + ${scriptJson(clientUrl)} + ')';
    $('status').className = 'failed';
    return;
  }
  // Console runs render too. run() resolves with the result; runWithTrace() gives the whole outcome (result or error, trace).
  var run = typeof pipeline.runWithTrace === 'function'
    ? function (options) {
        return pipeline.runWithTrace(options).then(function (outcome) {
          if (outcome.ok) return outcome;
          var e = new Error(outcome.error.errorType + ': ' + outcome.error.errorMessage);
          e.code = outcome.error.code;
          e.details = outcome.error;
          throw e;
        });
      }
    : pipeline.run.bind(pipeline);
  pipeline.run = function () {
    return run.apply(null, arguments).then(function (outcome) { render(outcome); return outcome && outcome.ok === true && 'result' in outcome ? outcome.result : outcome; }, function (error) {
      render({ ok: false, error: { errorType: error && error.name, errorMessage: error && error.message, code: error && error.code, trace: (error && error.trace) || (error && error.details && error.details.trace) || [] } });
      throw error;
    });
  };
  $('run').addEventListener('click', function () { pipeline.run().catch(function () {}); });
})();
</script>
</body>
</html>`;
  setSecurityHeaders(c);
  c.header('Content-Security-Policy', compilePageCsp(publicUrl, nonce));
  return c.html(body);
}
