// The Bookings screen of the demo app. It uses only the script-tag client (window.Client, dist/client.js):
// data source queries with order and pagination, an analytics event that fires a client action, notifications
// with read receipts, and the actions panel (runWithResult, getLogs, publish, debug compile page).
// Everything it shows was created through the same public API by demo/seed.mjs.
//
// Window.Client carries the app's client token, the one a real screen holds (docs/security.md, "Token kinds"):
// it runs published actions, uses the data sources, notifications and analytics. The actions panel stands in for
// the studio (every action with its publication state, run logs, publish, the debug page): it uses a second
// client with the API token that `npm start` serves at /dev/config in development only. A real screen has no
// such panel and never holds an API token.
(() => {
  const BOOKINGS = 'Bookings';
  const SUMMARIES = 'Booking summaries';
  const VALIDATE = 'validate-booking';
  const PAGE_SIZE = 5;
  const $ = (id) => document.getElementById(id);

  const state = { config: null, adminToken: null, offset: 0, total: 0, actions: new Map(), cards: new Map(), failed: false };
  /** The studio stand-in of the actions panel (API token, development only; see the top of this file). */
  let admin = null;

  // ---- small helpers -------------------------------------------------------------------------------------
  const el = (tag, props = {}, ...children) => {
    const node = Object.assign(document.createElement(tag), props);
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  };
  const when = (iso) => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' }) : '—');
  const json = (value) => JSON.stringify(value, null, 2);
  /** A text with line-break opportunities (<wbr>) before each `@` and after each `.`: e-mails and packages wrap at their parts. */
  const breakable = (text) =>
    String(text)
      .split(/(?<=\.)|(?=@)/)
      .flatMap((part, i) => (i ? [el('wbr'), part] : [part]));
  const describeError = (error) => `${error?.code ? `${error.code}: ` : ''}${error?.message ?? String(error)}`;
  const setStatus = (node, text, kind) => {
    node.textContent = text;
    node.dataset.state = kind;
  };
  const user = () => ({ email: $('user-email').value.trim().toLowerCase() });
  const recipientId = () => Client.Notifications.recipientId();

  // ---- connection: online or offline, and the work waiting on this device (Client.onStatusChange) --------
  const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  /** The header line: "Connected", "Connected · sending …" while queued work drains, "Offline · … waiting". */
  function showConnection({ online, queuedRuns, analyticsBatches, logUploads }) {
    const node = $('status');
    const waiting = [
      queuedRuns && count(queuedRuns, 'queued run', 'queued runs'),
      analyticsBatches && count(analyticsBatches, 'analytics batch', 'analytics batches'),
      logUploads && count(logUploads, 'run log', 'run logs'),
    ].filter(Boolean);
    Object.assign(node.dataset, { online: String(online), queuedRuns, analyticsBatches, logUploads });
    // A start that failed while online stays on screen until a load succeeds (status changes do not hide it).
    if (state.failed) return;
    if (!online) setStatus(node, `Offline${waiting.length ? ` · ${waiting.join(', ')} waiting` : ''}`, 'offline');
    else if (waiting.length) setStatus(node, `Connected · sending ${waiting.join(', ')}`, 'pending');
    else setStatus(node, 'Connected', 'ok');
  }

  // ---- bookings list: query with order and pagination ---------------------------------------------------
  async function loadBookings() {
    const bookings = await Client.DataSources.connect(BOOKINGS);
    const { entries, pagination } = await bookings.query({
      order: [
        ['createdAt', 'DESC'],
        ['id', 'DESC'],
      ],
      limit: PAGE_SIZE,
      offset: state.offset,
      includePagination: true,
    });
    state.total = pagination.total;
    const rows = entries.map((e) =>
      el(
        'tr',
        { className: 'booking-row' },
        el('td', { textContent: e.data.name ?? '' }),
        el('td', {}, ...breakable(e.data.email ?? '')),
        el('td', { textContent: e.data.date ?? '' }),
        el('td', { textContent: String(e.data.seats ?? '') }),
        el('td', { textContent: when(e.createdAt) }),
      ),
    );
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { colSpan: 5, className: 'empty', textContent: 'No bookings yet.' })));
    $('bookings-rows').replaceChildren(...rows);
    const first = pagination.total === 0 ? 0 : state.offset + 1;
    $('page-info').textContent = `${first}–${state.offset + entries.length} of ${pagination.total}`;
    $('bookings-total').textContent = `(${pagination.total})`;
    $('page-prev').disabled = state.offset === 0;
    $('page-next').disabled = state.offset + PAGE_SIZE >= pagination.total;
  }

  // ---- booking form: analytics event → client action (validate in the sandbox, insert) -------------------
  async function submitBooking(event) {
    event.preventDefault();
    const status = $('booking-status');
    const form = new FormData(event.target);
    const booking = {
      name: String(form.get('name') ?? ''),
      email: String(form.get('email') ?? ''),
      date: String(form.get('date') ?? ''),
      seats: Number(form.get('seats')),
    };
    const since = new Date(Date.now() - 1000).toISOString();
    setStatus(status, 'Validating in the sandbox…', 'pending');
    $('booking-submit').disabled = true;
    try {
      // The analytics event is the only thing the screen does: the action it triggers does the rest.
      const tracked = Client.App.Analytics.event({ category: 'form', action: 'submit', label: 'booking', ...booking });
      if (!tracked) throw new Error('Analytics tracking is disabled on this device, so no action runs');
      await Client.App.Analytics.idle();
      const { logs } = await admin.App.Actions.getLogs({ id: state.actions.get(VALIDATE)?.id, limit: 1 });
      const log = logs[0];
      if (!log || log.createdAt < since) throw new Error(`No run of ${VALIDATE} was recorded for this submit`);
      if (log.type === 'app.task.failed') {
        setStatus(status, `Not booked: ${log.data.result?.errorMessage ?? 'the action failed'}`, 'error');
        return;
      }
      setStatus(status, `Booked: ${booking.name} (${booking.seats} seat(s) on ${booking.date})`, 'ok');
      event.target.reset();
      $('booking-email').value = user().email;
      state.offset = 0;
      await loadBookings();
      refreshActions();
    } catch (error) {
      setStatus(status, `Failed: ${describeError(error)}`, 'error');
    } finally {
      $('booking-submit').disabled = false;
    }
  }

  // ---- inbox: scoped notifications, unread badge, mark as read -------------------------------------------
  async function loadInbox() {
    const notifications = await Client.Notifications.list({ recipientId: recipientId(), limit: 20 });
    const unread = await Client.Notifications.unreadCount(recipientId());
    const badge = $('badge');
    badge.textContent = String(unread);
    badge.dataset.count = String(unread);
    const items = notifications.map((n) => {
      const item = el(
        'li',
        { className: n.readAt ? 'notification read' : 'notification unread' },
        el('strong', { textContent: String(n.data.title ?? 'Notification') }),
        el('p', { textContent: String(n.data.body ?? '') }),
        el('time', { textContent: when(n.orderAt) }),
      );
      item.dataset.id = String(n.id);
      if (!n.readAt) {
        const button = el('button', { type: 'button', className: 'mark-read', textContent: 'Mark read' });
        button.addEventListener('click', () => markRead([n.id]));
        item.append(button);
      }
      return item;
    });
    if (items.length === 0) items.push(el('li', { className: 'empty', textContent: `Nothing for ${user().email} yet.` }));
    $('notifications').replaceChildren(...items);
    $('mark-all-read').disabled = unread === 0;
  }

  async function markRead(ids) {
    await Client.Notifications.markAsRead(recipientId(), ids);
    await loadInbox();
  }

  async function markAllRead() {
    const unread = await Client.Notifications.list({ recipientId: recipientId(), unread: true, limit: 1000 });
    if (unread.length) await markRead(unread.map((n) => n.id));
  }

  // ---- actions panel -------------------------------------------------------------------------------------
  function debugUrl(action, payload) {
    const { baseUrl, appId } = state.config;
    const query = new URLSearchParams({ token: state.adminToken, payload });
    return `${baseUrl}/v1/apps/${appId}/tasks/${action.id}/compile?html&${query}`;
  }

  function traceTable(trace) {
    const body = el('tbody');
    for (const t of trace ?? [])
      body.append(
        el(
          'tr',
          { className: t.outcome === 'failed' ? 'failed' : '' },
          el('td', { textContent: t.path }),
          el('td', {}, ...breakable(t.package ?? '')),
          el('td', { textContent: t.outcome }),
          el('td', { textContent: t.message ?? '' }),
        ),
      );
    return el(
      'table',
      { className: 'trace' },
      el('thead', {}, el('tr', {}, ...['Node', 'Package', 'Outcome', 'Message'].map((h) => el('th', { textContent: h })))),
      body,
    );
  }

  async function runNow(action, card) {
    const box = card.querySelector('.action-result');
    const button = card.querySelector('.action-run-now');
    box.hidden = false;
    box.dataset.state = 'pending';
    box.replaceChildren(el('p', { textContent: `Running ${action.name}…` }));
    button.disabled = true;
    try {
      let payload;
      try {
        payload = JSON.parse(card.querySelector('.action-payload').value || '{}');
      } catch (error) {
        throw Object.assign(new Error(`The payload is not JSON: ${error.message}`), { code: 'INVALID_PAYLOAD' });
      }
      const result = await Client.App.Actions.runWithResult(action.name, payload);
      box.dataset.state = 'ok';
      box.replaceChildren(el('p', { textContent: 'Result' }), el('pre', { className: 'result-value', textContent: json(result) }));
    } catch (error) {
      box.dataset.state = 'error';
      const trace = error?.details?.trace;
      // replaceChildren would write a null as the text "null": only the parts there are.
      const parts = [el('p', { className: 'error-message', textContent: describeError(error) })];
      if (error?.details?.errorType) parts.push(el('p', { className: 'error-type', textContent: `errorType: ${error.details.errorType}` }));
      if (trace?.length) parts.push(traceTable(trace));
      box.replaceChildren(...parts);
    } finally {
      button.disabled = false;
      refreshActions();
    }
  }

  function actionCard(action) {
    const card = $('action-template').content.firstElementChild.cloneNode(true);
    card.dataset.name = action.name;
    card.querySelector('.action-run').addEventListener('submit', (e) => {
      e.preventDefault();
      runNow(state.actions.get(action.name), card);
    });
    const payload = card.querySelector('.action-payload');
    payload.addEventListener('input', () => {
      card.querySelector('.action-debug').href = debugUrl(action, payload.value);
    });
    const published = card.querySelector('.action-published');
    published.addEventListener('click', async () => {
      const current = state.actions.get(action.name);
      await admin.App.Actions.publish(current.id, !current.published);
      refreshActions();
    });
    return card;
  }

  function fillCard(card, action, logs) {
    card.querySelector('.action-name').textContent = action.name;
    card.querySelector('.action-env').textContent = action.environment;
    const published = card.querySelector('.action-published');
    published.textContent = action.published ? 'published' : 'unpublished';
    published.dataset.published = String(action.published);
    published.title = action.published ? 'Click to unpublish' : 'Click to publish';
    const triggers = action.triggers.map((t) => t.trigger + (t.trigger === 'schedule' ? ` (${action.frequency}, ${action.timezone})` : ''));
    card.querySelector('.action-triggers').textContent = triggers.join(' · ');
    card.querySelector('.action-last').textContent = when(action.lastRunAt);
    card.querySelector('.action-next').textContent = when(action.nextRunAt);
    const debug = card.querySelector('.action-debug');
    debug.href = debugUrl(action, card.querySelector('.action-payload').value);
    const items = logs.map((log) => {
      const failed = log.type === 'app.task.failed';
      const outcome = failed ? log.data.result?.errorMessage : JSON.stringify(log.data.result);
      return el(
        'li',
        { className: failed ? 'log failed' : 'log' },
        el('time', { textContent: when(log.createdAt) }),
        ` ${log.type} · ${log.data.mode} · ${Math.round(log.data.duration)} ms · `,
        el('code', { textContent: (outcome ?? '').slice(0, 160) }),
      );
    });
    if (items.length === 0) items.push(el('li', { className: 'empty', textContent: 'No runs yet.' }));
    card.querySelector('.action-logs').replaceChildren(...items);
  }

  let refreshing = null;
  function refreshActions() {
    refreshing ??= (async () => {
      try {
        const actions = await admin.App.Actions.get();
        const { logs } = await admin.App.Actions.getLogs({ limit: 100 });
        const list = $('action-list');
        for (const action of actions) {
          state.actions.set(action.name, action);
          let card = state.cards.get(action.name);
          if (!card) {
            card = actionCard(action);
            state.cards.set(action.name, card);
            list.append(card);
          }
          fillCard(card, action, logs.filter((l) => l.data.actionId === action.id).slice(0, 5));
        }
        await loadSummaries();
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  }

  async function loadSummaries() {
    const summaries = await Client.DataSources.connect(SUMMARIES);
    const latest = await summaries.find({
      order: [
        ['createdAt', 'DESC'],
        ['id', 'DESC'],
      ],
      limit: 5,
    });
    const items = latest.map((e) =>
      el('li', { textContent: `${when(e.data.at)}: ${e.data.bookings} booking(s), ${e.data.seats} seat(s) (${e.data.trigger})` }),
    );
    if (items.length === 0) items.push(el('li', { className: 'empty', textContent: 'The scheduled action writes one every minute.' }));
    $('summary-list').replaceChildren(...items);
  }

  // ---- start ---------------------------------------------------------------------------------------------
  function signIn(email) {
    localStorage.setItem('demo:user', email);
    $('user-email').value = email;
    $('booking-email').value = email;
    Client.configure({ user: { email } });
  }

  const poll = (fn, ms) => {
    const tick = () => fn().catch((error) => console.warn('[demo]', describeError(error)));
    tick();
    return setInterval(tick, ms);
  };

  (async () => {
    const status = $('status');
    try {
      // Dev only: `npm start` serves the app's id and client token here, so nothing is hard-coded in the page.
      const { adminToken, ...config } = await (await fetch('/dev/config')).json();
      state.config = config;
      state.adminToken = adminToken;
      Client.configure(config);
      admin = Client.createClient({ ...config, authToken: adminToken });
      signIn(localStorage.getItem('demo:user') ?? 'ann@example.com');
      // Not a plain "Connected": what the client reports, live (offline, and what waits to be sent), from the start.
      Client.onStatusChange(showConnection);

      $('booking-form').addEventListener('submit', submitBooking);
      $('user-form').addEventListener('submit', (e) => {
        e.preventDefault();
        signIn(user().email);
        loadInbox();
      });
      $('page-prev').addEventListener('click', () => {
        state.offset = Math.max(0, state.offset - PAGE_SIZE);
        loadBookings();
      });
      $('page-next').addEventListener('click', () => {
        state.offset += PAGE_SIZE;
        loadBookings();
      });
      $('mark-all-read').addEventListener('click', markAllRead);
      $('inbox-toggle').addEventListener('click', () => $('inbox').scrollIntoView({ behavior: 'smooth' }));

      await loadApp();
    } catch (error) {
      state.failed = true;
      setStatus(status, `Failed: ${describeError(error)}`, 'error');
    }
  })();

  /** The app card and lists; started again when the network comes back if the device was offline. */
  async function loadApp() {
    try {
      const app = await Client.App.info();
      $('app-name').textContent = app.name;
      $('app-id').textContent = String(app.id);
      $('org-id').textContent = String(app.organizationId);
      $('backend').textContent = Client.baseUrl;
      $('timezone').textContent = Intl.DateTimeFormat().resolvedOptions().timeZone;
      $('app-card').hidden = false;
      await Promise.all([loadBookings(), loadInbox(), refreshActions()]);
      document.body.dataset.ready = 'true';
      if (state.failed) {
        state.failed = false;
        Client.status().then(showConnection);
      }
    } catch (error) {
      // Offline: the header already says so (Client.onStatusChange); try again once back online.
      if (navigator.onLine) throw error;
      console.warn('[demo] offline at start:', describeError(error));
      window.addEventListener(
        'online',
        () =>
          loadApp().catch((e) => {
            state.failed = true;
            setStatus($('status'), `Failed: ${describeError(e)}`, 'error');
          }),
        { once: true },
      );
      return;
    }
    poll(loadInbox, 1500);
    poll(refreshActions, 5000);
  }
})();
