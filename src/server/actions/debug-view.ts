/**
 * The execution view of the debug compile page (src/server/actions/compile-page.ts): browser code, written here
 * so it is type-checked, and sent as the source of `debugView` inside the page's nonce-carrying inline script
 * (`(${debugView})(config)`). It must therefore stay self-contained: no imports, no module-level names.
 *
 * It draws the pipeline as a tree (function, loop and if nodes, nested, each with the outcome of the last run;
 * a click shows a node's trace entries with their input and output), edits and validates the payload, runs and
 * re-runs without reloading, keeps this page session's runs (sessionStorage), builds the equivalent REST call as
 * curl (without the token) and, for studio tokens, offers "debug in page" (docs/pipeline.md): the script nodes
 * and custom functions injected as named page scripts (`pipeline/<path>.js`, `pipeline/custom/<package>.js`),
 * so DevTools breakpoints and `debugger` statements stop in them. Everything shown goes through `textContent`.
 */
import type { InPageCode, InPageFunction, PipelineNode, RunOutcome, TraceEntry } from '../../contract/pipeline.js';

export interface DebugViewConfig {
  publicUrl: string;
  clientUrl: string;
  appId: number;
  taskId: number;
  environment: 'live' | 'viewer';
  /** Where the action runs (`client` ones are refused by the backend's run route: the curl note says so). */
  runsOn: string;
  /** The `payload` query parameter (JSON text). */
  payload: string;
  /** Debug in page, offered to studio tokens only (null otherwise): the custom functions' code and whether it starts on. */
  inPage: { functions: { package: string; code: string }[]; on: boolean; runTimeoutMs: number } | null;
}

/** Runs in the page (see the file comment): builds the view and wraps `Client.App.Actions.Pipeline.run`. */
export function debugView(config: DebugViewConfig): void {
  const doc = document;
  const w = window as unknown as {
    ENV: { taskPipeline: PipelineNode[] };
    Client?: { App?: { Actions?: { Pipeline?: PipelineApi } } };
    __debugInPage?: { define(kind: 'script' | 'custom', key: string, fn: unknown): void };
  };
  type PipelineApi = {
    run(options?: Record<string, unknown>): Promise<unknown>;
    runWithTrace?(options?: Record<string, unknown>): Promise<RunOutcome>;
  };
  const nonce = (doc.currentScript as HTMLScriptElement | null)?.nonce ?? '';
  const $ = <T extends HTMLElement = HTMLElement>(id: string) => doc.getElementById(id) as T;
  const el = <K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] => {
    const e = doc.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const pretty = (v: unknown) => {
    try {
      const t = JSON.stringify(v, null, 2);
      return t === undefined ? 'undefined' : t;
    } catch {
      return String(v);
    }
  };
  const functions: PipelineNode[] = w.ENV.taskPipeline ?? [];
  const SCRIPT = 'com.client.function.script';
  const BUILTIN = 'com.client.function.';

  // ---- payload editor -------------------------------------------------------------------------------------
  const editor = $<HTMLTextAreaElement>('payload');
  const payloadError = $('payload-error');
  const runButton = $<HTMLButtonElement>('run');
  let running = false;
  try {
    editor.value = JSON.stringify(JSON.parse(config.payload), null, 2);
  } catch {
    editor.value = config.payload;
  }
  /** The editor's payload, or the reason it is not one. */
  const readPayload = (): { payload: Record<string, unknown> } | { error: string } => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(editor.value);
    } catch (error) {
      return { error: `Not valid JSON: ${(error as Error).message}` };
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { error: 'The payload must be a JSON object ({ … })' };
    return { payload: parsed as Record<string, unknown> };
  };
  const validate = () => {
    const read = readPayload();
    const error = 'error' in read ? read.error : '';
    payloadError.textContent = error;
    editor.setAttribute('aria-invalid', error ? 'true' : 'false');
    runButton.disabled = running || error !== '';
    updateCurl();
    return read;
  };

  // ---- copy as curl ---------------------------------------------------------------------------------------
  const curlBox = $('curl');
  const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  function curlCommand(): string {
    const read = readPayload();
    const body = JSON.stringify({ payload: 'payload' in read ? read.payload : {}, wait: true, environment: config.environment });
    return [
      `curl -X POST ${shellQuote(`${config.publicUrl}/v1/apps/${config.appId}/tasks/${config.taskId}/run`)}`,
      `  -H "Auth-token: $TOKEN"`,
      `  -H 'Content-Type: application/json'`,
      `  --data-raw ${shellQuote(body)}`,
    ].join(' \\\n');
  }
  function updateCurl() {
    curlBox.textContent = curlCommand();
  }
  if (config.runsOn === 'client')
    $('curl-note').textContent = 'This action has environment client: the backend answers WRONG_ENVIRONMENT (it runs on devices only).';
  $('copy-curl').addEventListener('click', () => {
    const text = curlCommand();
    const note = $('curl-note');
    const done = (how: string) => {
      note.textContent = how;
    };
    const select = () => {
      const range = doc.createRange();
      range.selectNodeContents(curlBox);
      const sel = window.getSelection();
      sel?.removeAllRanges();
      sel?.addRange(range);
      done('Selected: copy it with Ctrl+C / ⌘C.');
    };
    if (navigator.clipboard?.writeText) navigator.clipboard.writeText(text).then(() => done('Copied.'), select);
    else select();
  });

  // ---- tree -----------------------------------------------------------------------------------------------
  interface TreeNode {
    path: string;
    node: PipelineNode;
    button: HTMLButtonElement;
    badge: HTMLElement;
  }
  const tree: TreeNode[] = [];
  const byPath = new Map<string, TreeNode>();
  const shortName = (pkg: string) => (pkg.startsWith(BUILTIN) ? pkg.slice(BUILTIN.length) : pkg);
  const labelOf = (node: PipelineNode): [string, string] => {
    if (node.type === 'loop')
      return ['loop', node.items !== undefined ? `over ${node.items}` : node.range ? `${String(node.range.from)} … ${String(node.range.to)}` : ''];
    if (node.type === 'if')
      return ['if', `${node.conditions.length} condition${node.conditions.length === 1 ? '' : 's'}${node.elseFunctions ? ' + else' : ''}`];
    return [shortName(node.functionPackage), node.functionPackage.startsWith(BUILTIN) ? '' : 'custom function'];
  };
  function drawList(list: PipelineNode[] | undefined, base: string, parent: HTMLElement) {
    const ul = el('ul', 'tree');
    (list ?? []).forEach((node, i) => {
      const path = `${base}[${i}]`;
      const li = el('li');
      const button = el('button', 'node st-none');
      button.type = 'button';
      button.dataset.path = path;
      const [name, note] = labelOf(node);
      button.append(el('span', 'name', name));
      if (note) button.append(el('span', 'note', note));
      const badge = el('span', 'badge', '');
      button.append(badge);
      button.title = path;
      button.addEventListener('click', () => select(path));
      li.append(button);
      const t: TreeNode = { path, node, button, badge };
      tree.push(t);
      byPath.set(path, t);
      if (node.type === 'if') {
        node.conditions.forEach((c, k) => {
          const group = el('div', 'branch', `when ${c.condition}`);
          li.append(group);
          drawList(c.functions, `${path}.conditions[${k}].functions`, li);
        });
        if (node.elseFunctions) {
          li.append(el('div', 'branch', 'else'));
          drawList(node.elseFunctions, `${path}.elseFunctions`, li);
        }
      } else if (node.functions?.length) drawList(node.functions, `${path}.functions`, li);
      ul.append(li);
    });
    if (ul.children.length) parent.append(ul);
  }
  const treeBox = $('tree');
  drawList(functions, 'functions', treeBox);
  if (!tree.length) treeBox.textContent = '(an empty pipeline)';

  // ---- outcome rendering ----------------------------------------------------------------------------------
  let shown: RunOutcome | undefined;
  let selected: string | undefined;
  const entriesOf = (outcome: RunOutcome | undefined, path: string) => (outcome?.trace ?? []).filter((t) => t.path === path);
  /** A node's state in a run: failed wins, then ok, retried, skipped; none when it never ran. */
  function stateOf(entries: TraceEntry[]): { state: string; text: string } {
    const runs = entries.filter((e) => e.outcome !== 'log');
    if (!runs.length) return { state: 'none', text: 'not run' };
    const count = (o: string) => runs.filter((e) => e.outcome === o).length;
    const total = runs.reduce((sum, e) => sum + e.durationMs, 0);
    const times = runs.length > 1 ? ` ×${runs.length}` : '';
    const ms = ` · ${Math.round(total * 10) / 10} ms`;
    if (count('failed')) return { state: 'failed', text: `failed${runs.length > 1 ? ` (${count('failed')} of ${runs.length} runs)` : ''}${ms}` };
    if (count('ok')) return { state: 'ok', text: `ok${times}${ms}` };
    if (count('retried')) return { state: 'retried', text: `retried${times}${ms}` };
    return { state: 'skipped', text: `skipped${times}` };
  }
  function paintTree(outcome: RunOutcome | undefined) {
    for (const t of tree) {
      const { state, text } = outcome ? stateOf(entriesOf(outcome, t.path)) : { state: 'none', text: '' };
      t.button.className = `node st-${state}${selected === t.path ? ' selected' : ''}`;
      t.badge.textContent = text;
    }
  }
  /** A trace value: JSON, or `{ $truncated, length, preview }` shown as its preview with a note. */
  function valueBlock(label: string, value: unknown): HTMLElement {
    const box = el('div', 'value');
    box.append(el('div', 'label', label));
    const v = value as { $truncated?: unknown; length?: unknown; preview?: unknown } | null;
    if (v && typeof v === 'object' && v.$truncated === true) {
      box.append(el('div', 'truncated', `Truncated: ${String(v.length)} characters of JSON, the first ${String(v.preview).length} shown`));
      box.append(el('pre', '', String(v.preview)));
    } else box.append(el('pre', '', pretty(value)));
    return box;
  }
  const MAX_LISTED = 100;
  function select(path: string) {
    selected = path;
    paintTree(shown);
    const detail = $('detail');
    detail.replaceChildren();
    const t = byPath.get(path);
    if (!t) return;
    const [name] = labelOf(t.node);
    detail.append(el('h3', '', `${name} · ${path}`));
    const entries = entriesOf(shown, path);
    const { text } = stateOf(entries);
    detail.append(el('p', 'summary', shown ? (entries.length ? text : 'Never ran in this run.') : 'Not run yet: press Run.'));
    const runs = entries.filter((e) => e.outcome !== 'log');
    const logs = entries.filter((e) => e.outcome === 'log');
    if (runs.some((e) => e.iteration !== undefined)) {
      const its = runs.filter((e) => e.iteration !== undefined).map((e) => e.iteration);
      detail.append(el('p', 'iterations', `Ran in ${runs.length} iteration entries: ${its.slice(0, 30).join(', ')}${its.length > 30 ? ', …' : ''}`));
    }
    runs.slice(0, MAX_LISTED).forEach((e) => {
      const box = el('div', `entry st-${e.outcome}`);
      const head = [e.outcome, `${e.durationMs} ms`];
      if (e.iteration !== undefined) head.unshift(`iteration ${e.iteration}`);
      if (e.startMs !== undefined) head.push(`started at ${e.startMs} ms`);
      if (e.retries) head.push(`${e.retries} retr${e.retries === 1 ? 'y' : 'ies'}`);
      box.append(el('div', 'head', head.join(' · ')));
      if (e.message) box.append(el('div', 'message', e.message));
      if ('input' in e) box.append(valueBlock('Input (evaluated settings)', e.input));
      if ('output' in e) box.append(valueBlock('Output', e.output));
      detail.append(box);
    });
    if (runs.length > MAX_LISTED) detail.append(el('p', 'more', `${runs.length - MAX_LISTED} more entries not listed here (see the trace table).`));
    if (logs.length) {
      detail.append(el('div', 'label', 'Logs'));
      detail.append(el('pre', 'logs', logs.map((l) => (l.iteration !== undefined ? `[${l.iteration}] ` : '') + (l.message ?? '')).join('\n')));
    }
    const definition: Record<string, unknown> = { ...(t.node as unknown as Record<string, unknown>) };
    delete definition.functions;
    delete definition.elseFunctions;
    if (t.node.type === 'if') definition.conditions = t.node.conditions.map((c) => ({ condition: c.condition }));
    detail.append(valueBlock('Definition', definition));
  }
  function render(outcome: RunOutcome) {
    shown = outcome;
    const status = $('status');
    status.textContent = outcome.ok ? 'succeeded' : 'failed';
    status.className = outcome.ok ? 'ok' : 'failed';
    $('status-detail').textContent = outcome.ok
      ? ` in ${outcome.durationMs} ms`
      : ` after ${outcome.durationMs} ms: ${outcome.error.errorType}: ${outcome.error.errorMessage}`;
    $('result').textContent = pretty(
      outcome.ok
        ? outcome.result
        : outcome.error.code
          ? { code: outcome.error.code, errorType: outcome.error.errorType, errorMessage: outcome.error.errorMessage }
          : outcome.error,
    );
    const tbody = $<HTMLTableElement>('trace').tBodies[0]!;
    tbody.replaceChildren();
    for (const t of outcome.trace) {
      const tr = el('tr', t.outcome);
      for (const v of [t.path, t.package, t.durationMs, t.outcome, t.message ?? '', t.iteration ?? '']) tr.append(el('td', '', String(v)));
      tbody.append(tr);
    }
    paintTree(outcome);
    const failedNode = outcome.trace.find((t) => t.outcome === 'failed' && byPath.has(t.path));
    if (selected !== undefined) select(selected);
    else if (failedNode) select(failedNode.path);
  }

  // ---- run history (this page session) --------------------------------------------------------------------
  interface HistoryItem {
    at: string;
    payload: string;
    mode: 'sandbox' | 'in page';
    outcome: RunOutcome;
  }
  const historyKey = `iar-debug-runs:${config.appId}:${config.taskId}`;
  const loadHistory = (): HistoryItem[] => {
    try {
      const list = JSON.parse(sessionStorage.getItem(historyKey) ?? '[]') as unknown;
      return Array.isArray(list) ? (list as HistoryItem[]) : [];
    } catch {
      return [];
    }
  };
  let history = loadHistory();
  function saveHistory() {
    for (let keep = history.length; keep > 0; keep--) {
      try {
        sessionStorage.setItem(historyKey, JSON.stringify(history.slice(0, keep)));
        return;
      } catch {
        /* over the quota: keep fewer */
      }
    }
  }
  function drawHistory() {
    const list = $('history');
    list.replaceChildren();
    if (!history.length) list.append(el('li', 'empty', 'No runs yet in this page session.'));
    history.forEach((h, i) => {
      const li = el('li');
      const b = el('button', `run-item ${h.outcome.ok ? 'ok' : 'failed'}`);
      b.type = 'button';
      const what = h.outcome.ok ? `ok · ${h.outcome.durationMs} ms` : `failed · ${h.outcome.error.code}`;
      b.append(
        el('span', 'when', h.at),
        el('span', 'mode', h.mode),
        el('span', 'what', what),
        el('code', 'payload', h.payload.length > 80 ? `${h.payload.slice(0, 80)}…` : h.payload),
      );
      b.addEventListener('click', () => {
        editor.value = JSON.stringify(JSON.parse(h.payload), null, 2);
        validate();
        render(h.outcome);
      });
      li.append(b);
      list.append(li);
      if (i === 0) li.className = 'latest';
    });
  }
  function remember(payload: Record<string, unknown>, mode: HistoryItem['mode'], outcome: RunOutcome) {
    history.unshift({ at: new Date().toLocaleTimeString(), payload: JSON.stringify(payload), mode, outcome });
    history = history.slice(0, 20);
    saveHistory();
    drawHistory();
  }
  drawHistory();

  // ---- debug in page (studio tokens only) -----------------------------------------------------------------
  const pageFunctions = { script: new Map<string, InPageFunction>(), custom: new Map<string, (client: unknown) => InPageFunction>() };
  let injected = false;
  const inPageBox = doc.getElementById('in-page') as HTMLInputElement | null;
  /** Adds each script node and custom function as a named script of the page (once): DevTools lists them under pipeline/. */
  function injectPageScripts() {
    if (injected || !config.inPage) return;
    injected = true;
    w.__debugInPage = {
      define(kind, key, fn) {
        if (kind === 'script') pageFunctions.script.set(key, fn as InPageFunction);
        else pageFunctions.custom.set(key, fn as (client: unknown) => InPageFunction);
      },
    };
    const names: string[] = [];
    const add = (text: string, url: string) => {
      const s = doc.createElement('script');
      s.nonce = nonce;
      s.text = `${text}\n//# sourceURL=${url}`;
      doc.head.append(s);
      names.push(url);
    };
    const walk = (list: PipelineNode[] | undefined, base: string) =>
      (list ?? []).forEach((node, i) => {
        const path = `${base}[${i}]`;
        if (node.type === 'loop') walk(node.functions, `${path}.functions`);
        else if (node.type === 'if') {
          node.conditions.forEach((c, k) => walk(c.functions, `${path}.conditions[${k}].functions`));
          walk(node.elseFunctions, `${path}.elseFunctions`);
        } else {
          if (node.functionPackage === SCRIPT && typeof node.settings?.code === 'string')
            add(
              `__debugInPage.define("script", ${JSON.stringify(path)}, async function (settings, context, Client, currentItem, currentIndex) {${node.settings.code}\n});`,
              `pipeline/${path}.js`,
            );
          walk(node.functions, `${path}.functions`);
        }
      });
    walk(functions, 'functions');
    for (const f of config.inPage.functions)
      add(`__debugInPage.define("custom", ${JSON.stringify(f.package)}, function (Client) { return (${f.code}\n); });`, `pipeline/custom/${f.package}.js`);
    $('in-page-scripts').textContent = names.length
      ? `Scripts in DevTools (Sources): ${names.join(', ')}`
      : 'This pipeline has no script node or custom function.';
  }
  const inPageCode: InPageCode = {
    script: (path) => pageFunctions.script.get(path),
    custom(pkg) {
      const factory = pageFunctions.custom.get(pkg);
      return factory && ((settings, context, client, item, index) => factory(client)(settings, context, client, item, index));
    },
  };
  if (inPageBox) {
    inPageBox.checked = config.inPage?.on === true;
    const sync = () => {
      if (inPageBox.checked) injectPageScripts();
      doc.body.classList.toggle('in-page', inPageBox.checked);
    };
    inPageBox.addEventListener('change', sync);
    sync();
  }

  // ---- running --------------------------------------------------------------------------------------------
  const pipeline = w.Client?.App?.Actions?.Pipeline;
  if (!pipeline || typeof pipeline.run !== 'function') {
    const status = $('status');
    status.textContent = `client.js did not load (see ${config.clientUrl})`;
    status.className = 'failed';
    runButton.disabled = true;
    return;
  }
  const runWithTrace = pipeline.runWithTrace?.bind(pipeline);
  const plainRun = pipeline.run.bind(pipeline);
  /** Console and button runs: the editor's payload and the page's mode unless given; renders and records the outcome. */
  pipeline.run = async (options: Record<string, unknown> = {}) => {
    const opts = { ...options };
    if (opts.payload === undefined) {
      const read = readPayload();
      if ('error' in read) throw new Error(`The payload editor does not hold a JSON object: ${read.error}`);
      opts.payload = read.payload;
    }
    const inPage = opts.inPage === undefined && inPageBox?.checked === true;
    if (inPage) {
      injectPageScripts();
      opts.inPage = inPageCode;
      opts.limits = { runTimeoutMs: config.inPage!.runTimeoutMs, ...((opts.limits as object | undefined) ?? {}) };
    }
    running = true;
    validate();
    $('status').textContent = 'running…';
    $('status').className = 'running';
    $('status-detail').textContent = '';
    try {
      if (!runWithTrace) return await plainRun(opts);
      const outcome = await runWithTrace(opts);
      render(outcome);
      remember(opts.payload as Record<string, unknown>, opts.inPage ? 'in page' : 'sandbox', outcome);
      if (outcome.ok) return outcome.result;
      const error = new Error(`${outcome.error.errorType}: ${outcome.error.errorMessage}`) as Error & { code?: string; details?: unknown };
      error.code = outcome.error.code;
      error.details = outcome.error;
      throw error;
    } finally {
      running = false;
      validate();
    }
  };
  editor.addEventListener('input', validate);
  runButton.addEventListener('click', () => {
    pipeline.run().catch(() => undefined);
  });
  validate();
  if (history[0]) render(history[0].outcome);
}
