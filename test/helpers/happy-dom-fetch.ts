/**
 * happy-dom's fetch keeps an HTTP cache that does not let a page's own conditional request through: a 304
 * answering a request the page sent with `If-None-Match` throws inside happy-dom ("ResponseCache: Cached
 * response not found", an unhandled rejection) and that fetch never settles. Browsers hand the 304 to the page
 * (Fetch standard, HTTP-network-or-cache fetch: a request with a conditional header bypasses the HTTP cache).
 * This wrapper keeps happy-dom's cache out of such requests (its cache skips requests with
 * `Cache-Control: no-cache`), so tests in happy-dom see what a browser sees. Node's own fetch needs nothing.
 */
export function passConditionalRequests(fetchImpl: typeof fetch): typeof fetch {
  return (input, init) => {
    if (input instanceof Request && input.headers.has('If-None-Match')) input.headers.set('Cache-Control', 'no-cache');
    return fetchImpl(input, init);
  };
}
