// Seeds the demo app through the public API only (no direct database writes), so it doubles as example code.
// Later issues add the Bookings data source, actions and notifications here.
export async function seedDemo({ url, bootstrap, dist }) {
  const { createClient } = await import(dist);
  const client = createClient({ baseUrl: url, appId: bootstrap.appId, authToken: bootstrap.apiToken });
  const app = await client.App.info();
  return { app };
}
