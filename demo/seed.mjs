// Seeds the demo app through the public API only (no direct database writes), so it doubles as example code.
// Idempotent: every object is looked up by name first, so a restart on the same data folder adds nothing.

/** Names the demo screen relies on (demo/demo.js reads them from /dev/config). */
export const DEMO = {
  bookings: 'Bookings',
  summaries: 'Booking summaries',
  actions: {
    validate: 'validate-booking',
    notify: 'notify-booker',
    summary: 'bookings-summary',
  },
};

/** The client action: validates the submitted booking inside the QuickJS sandbox, then inserts it. */
const VALIDATE_BOOKING = `
// Fired by the form's analytics event (context.event), or run by hand with the booking as payload.
const input = context.event ? context.event.data : context;
const name = String(input.name ?? '').trim();
const email = String(input.email ?? '').trim().toLowerCase();
const date = String(input.date ?? '');
const seats = Number(input.seats);
const problems = [];
if (name === '') problems.push('name is required');
if (!/^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$/.test(email)) problems.push('email must be an e-mail address');
if (!/^\\d{4}-\\d{2}-\\d{2}$/.test(date)) problems.push('date must be YYYY-MM-DD');
if (!Number.isInteger(seats) || seats < 1 || seats > 8) problems.push('seats must be a whole number from 1 to 8');
if (problems.length) throw new Error('Invalid booking: ' + problems.join(', '));
return { booking: { name, email, date, seats, status: 'confirmed' } };
`.trim();

/** The scheduled action's arithmetic (the records come from the read-datasource step before it). */
const SUMMARIZE = `
const bookings = context.records.map((r) => r.data);
const seats = bookings.reduce((sum, b) => sum + (Number(b.seats) || 0), 0);
return { summary: { bookings: bookings.length, seats, at: new Date().toISOString(), trigger: context.trigger } };
`.trim();

/** Demo action definitions (create input of Client.App.Actions). */
export function demoActions({ bookingsId, timezone }) {
  return [
    {
      name: DEMO.actions.validate,
      environment: 'client',
      triggers: [{ trigger: 'analytics', where: { type: 'analytics.event', data: { category: 'form', action: 'submit', label: 'booking' } } }],
      functions: [
        { functionPackage: 'com.client.function.script', settings: { code: VALIDATE_BOOKING } },
        { functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: DEMO.bookings, data: '{{ booking }}' } },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ entry }}' } },
      ],
    },
    {
      name: DEMO.actions.notify,
      environment: 'server',
      triggers: [{ trigger: 'log', where: { type: 'dataSource.entry.create', dataSourceId: bookingsId } }],
      functions: [
        {
          functionPackage: 'com.client.function.script',
          settings: {
            code: "if (!context.log) throw new Error('notify-booker runs from its log trigger: create a booking to fire it');\nreturn { entryId: context.log.dataSourceEntryId };",
          },
        },
        { functionPackage: 'com.client.function.read-datasource', settings: { dataSourceName: DEMO.bookings, where: { $id: '{{ entryId }}' }, limit: 1 } },
        { functionPackage: 'com.client.function.set', settings: { booking: '{{ records[0].data }}' } },
        {
          functionPackage: 'com.client.function.send-notification',
          settings: {
            status: 'published',
            scope: { email: '{{ booking.email }}' },
            data: {
              title: 'Booking confirmed',
              body: '{{ booking.name }}, your booking of {{ booking.seats }} seat(s) on {{ booking.date }} is confirmed.',
              bookingId: '{{ entryId }}',
            },
          },
        },
        { functionPackage: 'com.client.function.return', settings: { value: { notificationId: '{{ notification.id }}' } } },
      ],
    },
    {
      name: DEMO.actions.summary,
      environment: 'server',
      frequency: '* * * * *',
      timezone,
      triggers: [{ trigger: 'schedule' }, { trigger: 'manual' }],
      functions: [
        { functionPackage: 'com.client.function.read-datasource', settings: { dataSourceName: DEMO.bookings, limit: 1000 } },
        { functionPackage: 'com.client.function.script', settings: { code: SUMMARIZE } },
        { functionPackage: 'com.client.function.insert-entry', settings: { dataSourceName: DEMO.summaries, data: '{{ summary }}' } },
        { functionPackage: 'com.client.function.return', settings: { value: '{{ summary }}' } },
      ],
    },
  ];
}

async function ensureDataSource(client, name, columns) {
  const existing = (await client.DataSources.get()).find((ds) => ds.name === name);
  if (existing) return existing;
  await client.DataSources.create({ name });
  return client.DataSources.update(name, { columns });
}

/**
 * Creates (once) the Bookings and summaries data sources and the three demo actions, and publishes them.
 * `timezone` is the user's zone for the scheduled action (default: this machine's zone).
 */
export async function seedDemo({ url, bootstrap, dist, timezone }) {
  const { createClient } = await import(dist);
  const client = createClient({ baseUrl: url, appId: bootstrap.appId, authToken: bootstrap.apiToken });
  const app = await client.App.info();
  const bookings = await ensureDataSource(client, DEMO.bookings, ['name', 'email', 'date', 'seats', 'status']);
  await ensureDataSource(client, DEMO.summaries, ['bookings', 'seats', 'at', 'trigger']);
  const zone = timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC';
  const existing = new Map((await client.App.Actions.get()).map((a) => [a.name, a]));
  const actions = {};
  for (const definition of demoActions({ bookingsId: bookings.id, timezone: zone })) {
    let action = existing.get(definition.name) ?? (await client.App.Actions.create(definition));
    if (!action.published) action = await client.App.Actions.publish(action.id, true);
    actions[definition.name] = action;
  }
  return { app, dataSources: { bookings }, actions };
}
