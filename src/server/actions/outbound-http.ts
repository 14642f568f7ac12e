/**
 * Outbound HTTP for the `http-request` built-in on the server: timeout, cancellation (the caller's signal:
 * the node's or the run's time is up) and a response size cap enforced while reading. Failures carry a
 * `code` the run reports: HTTP_INVALID_URL, HTTP_TIMEOUT, HTTP_FAILED, RESPONSE_TOO_LARGE.
 */
import type { HttpRequestLike, HttpResponseLike } from '../../contract/pipeline.js';
import { redactString } from '../../pipeline/trace-redact.js';
import { checkOutboundUrl, type PrivateNetworkPolicy } from '../http/outbound-guard.js';

export interface OutboundLimits {
  timeoutMs: number;
  maxResponseBytes: number;
  /** `deny`: refuse private network addresses, redirects included (src/server/http/outbound-guard.ts). */
  privateNetworks?: PrivateNetworkPolicy;
}

const MAX_REDIRECTS = 10;

/** An outbound call that failed; `code` becomes the run's error code (src/functions/builtins.ts). */
export class OutboundError extends Error {
  constructor(
    readonly code: 'HTTP_INVALID_URL' | 'HTTP_TIMEOUT' | 'HTTP_FAILED' | 'RESPONSE_TOO_LARGE',
    message: string,
  ) {
    super(message);
    this.name = code === 'HTTP_TIMEOUT' ? 'TimeoutError' : code === 'RESPONSE_TOO_LARGE' ? 'ResponseTooLargeError' : 'HttpRequestError';
  }
}

export const DEFAULT_OUTBOUND: OutboundLimits = { timeoutMs: 30_000, maxResponseBytes: 5 * 1024 * 1024 };

export async function outboundRequest(request: HttpRequestLike, limits: OutboundLimits = DEFAULT_OUTBOUND, signal?: AbortSignal): Promise<HttpResponseLike> {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    throw new OutboundError('HTTP_INVALID_URL', `http-request: "${redactString(String(request.url))}" is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundError('HTTP_INVALID_URL', `http-request: only http and https URLs, got ${url.protocol}`);
  const method = (request.method ?? 'GET').toUpperCase();
  // Error messages reach log records and callers: the URL in them has its credentials redacted (query keys, userinfo).
  const shown = redactString(url.href);
  const headers = new Headers(request.headers ?? {});
  let body: string | undefined;
  if (request.body !== undefined && request.body !== null && method !== 'GET' && method !== 'HEAD') {
    if (typeof request.body === 'string') body = request.body;
    else {
      body = JSON.stringify(request.body);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    }
  }
  const timeout = AbortSignal.timeout(limits.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let response: Response;
  try {
    if (limits.privateNetworks !== 'deny') response = await fetch(url, { method, headers, body, signal: combined, redirect: 'follow' });
    else {
      // Redirects are followed here, so that every hop's address is checked.
      let target = url;
      let hopMethod = method;
      let hopBody = body;
      for (let hop = 0; ; hop++) {
        await checkOutboundUrl(target, 'deny');
        response = await fetch(target, { method: hopMethod, headers, body: hopBody, signal: combined, redirect: 'manual' });
        const location = response.headers.get('location');
        if (response.status < 300 || response.status > 399 || location === null) break;
        if (hop >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
        await response.body?.cancel();
        const previous = target;
        target = new URL(location, target);
        // As fetch's own redirect mode does: credentials never travel to another origin.
        if (target.origin !== previous.origin) for (const name of ['authorization', 'cookie', 'proxy-authorization']) headers.delete(name);
        if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`redirect to ${target.protocol} refused`);
        if (response.status === 303 || ((response.status === 301 || response.status === 302) && hopMethod === 'POST')) {
          hopMethod = hopMethod === 'HEAD' ? 'HEAD' : 'GET';
          hopBody = undefined;
        }
      }
    }
  } catch (error) {
    if (timeout.aborted) throw new OutboundError('HTTP_TIMEOUT', `http-request: ${method} ${shown} timed out after ${limits.timeoutMs} ms`);
    throw new OutboundError('HTTP_FAILED', `http-request: ${method} ${shown} failed: ${(error as Error).message}`);
  }
  const tooLarge = () =>
    new OutboundError('RESPONSE_TOO_LARGE', `http-request: the response of ${method} ${shown} is larger than ${limits.maxResponseBytes} bytes`);
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limits.maxResponseBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > limits.maxResponseBytes) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge();
        }
        chunks.push(value);
      }
    } catch (error) {
      if (error instanceof OutboundError) throw error;
      if (timeout.aborted)
        throw new OutboundError('HTTP_TIMEOUT', `http-request: ${method} ${shown} timed out after ${limits.timeoutMs} ms while reading the response`);
      throw new OutboundError('HTTP_FAILED', `http-request: reading the response of ${method} ${shown} failed: ${(error as Error).message}`);
    }
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const type = response.headers.get('content-type') ?? '';
  let parsed: unknown = text;
  if (type.includes('json') && text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  return { status: response.status, headers: Object.fromEntries(response.headers.entries()), body: parsed };
}
