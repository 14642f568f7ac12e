import { ApiError, ClientError, NetworkError, TimeoutError } from './errors.js';

export type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[];

export interface RequestOptions {
  /** Query parameters; `undefined` and `null` values are left out, arrays are repeated. */
  query?: Record<string, QueryValue>;
  /** A JSON body (serialized with JSON.stringify). */
  json?: unknown;
  /** A raw body (FormData, Blob, string…); wins over `json`. */
  body?: BodyInit;
  headers?: Record<string, string>;
  /** Answer the body of a successful response as a Blob (a file's bytes) instead of parsing it. */
  blob?: boolean;
  /** Milliseconds before the request fails with `TimeoutError`; `false` disables it. */
  timeout?: number | false;
  signal?: AbortSignal;
}

export interface TransportConfig {
  baseUrl: () => string;
  authToken: () => string | undefined;
  fetch?: typeof fetch;
  /** Read before every request (a client's current `fetch` after `configure()`); wins over `fetch` when it gives one. */
  resolveFetch?: () => typeof fetch | undefined;
  /** Default timeout for every request, ms (default 30 000); a function is read before every request. */
  timeout?: number | (() => number | undefined);
  hooks?: {
    beforeRequest?: ((request: Request) => Request | void | Promise<Request | void>)[];
    afterResponse?: ((request: Request, response: Response) => Response | void | Promise<Response | void>)[];
  };
}

/** An answer with its status and headers (`Transport.send`). */
export interface TransportResponse<T> {
  status: number;
  headers: Headers;
  /** The parsed body; undefined when there is none (204, 304). */
  body: T;
}

export interface Transport {
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<T>;
  /**
   * `request` answering the status and headers with the body (e.g. to read an `ETag`). A 304 Not Modified (to a
   * conditional request: `headers: { 'If-None-Match': tag }`) is an answer with no body, not an error.
   */
  send<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<TransportResponse<T | undefined>>;
  /** Builds an absolute URL of the backend for `path` (no request is made). */
  url(path: string, query?: Record<string, QueryValue>): string;
}

export function buildUrl(base: string, path: string, query?: Record<string, QueryValue>): string {
  const url = new URL(base.replace(/\/+$/, '') + '/' + path.replace(/^\/+/, ''));
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const v of value) url.searchParams.append(key, String(v));
    else url.searchParams.set(key, String(value));
  }
  return url.toString();
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return undefined;
  const type = response.headers.get('content-type') ?? '';
  if (type.includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function toApiError(status: number, body: unknown, method: string, url: string, statusText: string): ApiError {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  const code = typeof error?.code === 'string' ? error.code : `HTTP_${status}`;
  const message = typeof error?.message === 'string' ? error.message : `${method} ${url} failed with ${status}${statusText ? ' ' + statusText : ''}`;
  const { code: _c, message: _m, ...rest } = (error ?? {}) as Record<string, unknown>;
  const details = Object.keys(rest).length ? rest : typeof body === 'string' ? body : undefined;
  return new ApiError({ status, code, message, details, method, url });
}

/** The one fetch wrapper shared by every sub-client. */
export function createTransport(config: TransportConfig): Transport {
  const defaultTimeout = () => (typeof config.timeout === 'function' ? config.timeout() : config.timeout) ?? 30_000;

  const transport: Transport = {
    url: (path, query) => buildUrl(config.baseUrl(), path, query),

    request: (method, path, options) => transport.send(method, path, options).then((r) => r.body as never),

    async send(method, path, options = {}) {
      const doFetch = config.resolveFetch?.() ?? config.fetch ?? globalThis.fetch;
      if (typeof doFetch !== 'function') throw new ClientError('NO_FETCH', 'No fetch implementation: pass `fetch` in the client config');
      const url = buildUrl(config.baseUrl(), path, options.query);
      const headers = new Headers(options.headers);
      headers.set('Accept', 'application/json');
      const token = config.authToken();
      if (token && !headers.has('Auth-token')) headers.set('Auth-token', token);
      let body: BodyInit | undefined = options.body;
      if (body === undefined && options.json !== undefined) {
        body = JSON.stringify(options.json);
        headers.set('Content-Type', 'application/json');
      }

      const timeoutMs = options.timeout === false ? undefined : (options.timeout ?? defaultTimeout());
      const controller = new AbortController();
      const onAbort = () => controller.abort(options.signal?.reason);
      if (options.signal?.aborted) onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      let timedOut = false;
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = true;
              controller.abort();
            }, timeoutMs);

      let request = new Request(url, { method, headers, body: body ?? null, signal: controller.signal });
      try {
        for (const hook of config.hooks?.beforeRequest ?? []) request = (await hook(request)) ?? request;
        let response: Response;
        try {
          response = await doFetch(request);
        } catch (error) {
          if (timedOut) throw new TimeoutError(`${method} ${url} timed out after ${timeoutMs} ms`, timeoutMs!);
          if (options.signal?.aborted) throw options.signal.reason ?? error;
          throw new NetworkError(`${method} ${url} failed: ${(error as Error)?.message ?? String(error)}`, error);
        }
        for (const hook of config.hooks?.afterResponse ?? []) response = (await hook(request, response)) ?? response;
        let parsed: unknown;
        try {
          parsed = options.blob && response.ok ? await response.blob() : await readBody(response);
        } catch (error) {
          if (timedOut) throw new TimeoutError(`${method} ${url} timed out after ${timeoutMs} ms`, timeoutMs!);
          if (options.signal?.aborted) throw options.signal.reason ?? error;
          throw new NetworkError(`${method} ${url}: reading the response failed`, error);
        }
        if (!response.ok && response.status !== 304) throw toApiError(response.status, parsed, method, url, response.statusText);
        return { status: response.status, headers: response.headers, body: parsed as never };
      } finally {
        if (timer !== undefined) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
      }
    },
  };
  return transport;
}
