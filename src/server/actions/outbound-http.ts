/** Outbound HTTP for the `http-request` built-in on the server: timeout and response size cap. */
import type { HttpRequestLike, HttpResponseLike } from '../../pipeline/types.js';

export interface OutboundLimits {
  timeoutMs: number;
  maxResponseBytes: number;
}

export const DEFAULT_OUTBOUND: OutboundLimits = { timeoutMs: 30_000, maxResponseBytes: 5 * 1024 * 1024 };

export async function outboundRequest(request: HttpRequestLike, limits: OutboundLimits = DEFAULT_OUTBOUND, signal?: AbortSignal): Promise<HttpResponseLike> {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    throw new Error(`http-request: "${request.url}" is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`http-request: only http and https URLs, got ${url.protocol}`);
  const method = (request.method ?? 'GET').toUpperCase();
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
    response = await fetch(url, { method, headers, body, signal: combined, redirect: 'follow' });
  } catch (error) {
    if (timeout.aborted) throw new Error(`http-request: ${method} ${url} timed out after ${limits.timeoutMs} ms`);
    throw new Error(`http-request: ${method} ${url} failed: ${(error as Error).message}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limits.maxResponseBytes) {
        await reader.cancel();
        throw new Error(`http-request: the response of ${method} ${url} is larger than ${limits.maxResponseBytes} bytes`);
      }
      chunks.push(value);
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
