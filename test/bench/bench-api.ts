/**
 * The JSON API client the SQL benches share: `server()` is read at each call, because they restart the server on
 * the same port (a fresh one, nothing cached) after writing rows straight into its database.
 */
export function benchApi(server: () => { url: string }, apiToken: string) {
  return async (method: string, path: string, body?: unknown) => {
    const url = server().url + path;
    const init = {
      method,
      headers: { 'Auth-token': apiToken, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    };
    // A keep-alive socket of the first server (same port after the restart) is reset once: retry.
    const res = await fetch(url, init).catch(() => fetch(url, init));
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : undefined;
  };
}
