/**
 * Typed errors of the client, modelled on ky: every failure is an instance of
 * one of these classes, with a stable `code`. The guards check a brand string
 * instead of `instanceof`, so they also work across realms (iframes, workers,
 * two copies of the library).
 */

const BRAND = Symbol.for('in-app-runtime.error');

export type ErrorKind = 'ApiError' | 'NetworkError' | 'TimeoutError' | 'ClientError';

export class RuntimeError extends Error {
  readonly code: string;
  readonly details: unknown;
  readonly [BRAND]: ErrorKind;
  constructor(kind: ErrorKind, code: string, message: string, details?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.name = kind;
    this.code = code;
    this.details = details;
    this[BRAND] = kind;
  }
}

/** The backend answered with a non-2xx status and (usually) `{ error: { code, message } }`. */
export class ApiError extends RuntimeError {
  readonly status: number;
  readonly method: string;
  readonly url: string;
  constructor(init: { status: number; code: string; message: string; details?: unknown; method: string; url: string }) {
    super('ApiError', init.code, init.message, init.details);
    this.status = init.status;
    this.method = init.method;
    this.url = init.url;
  }
}

/** The request never got an HTTP answer (offline, DNS, refused connection, CORS). */
export class NetworkError extends RuntimeError {
  constructor(message: string, cause?: unknown) {
    super('NetworkError', 'NETWORK_ERROR', message, undefined, { cause });
  }
}

/** The request took longer than its timeout. */
export class TimeoutError extends RuntimeError {
  readonly timeoutMs: number;
  constructor(message: string, timeoutMs: number) {
    super('TimeoutError', 'TIMEOUT', message);
    this.timeoutMs = timeoutMs;
  }
}

/** Refused on the client before anything was sent: bad arguments, missing configuration. */
export class ClientError extends RuntimeError {
  constructor(code: string, message: string, details?: unknown) {
    super('ClientError', code, message, details);
  }
}

function kindOf(value: unknown): ErrorKind | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  return (value as { [BRAND]?: ErrorKind })[BRAND];
}

export const isRuntimeError = (value: unknown): value is RuntimeError => kindOf(value) !== undefined;
export const isApiError = (value: unknown): value is ApiError => kindOf(value) === 'ApiError';
export const isNetworkError = (value: unknown): value is NetworkError => kindOf(value) === 'NetworkError';
export const isTimeoutError = (value: unknown): value is TimeoutError => kindOf(value) === 'TimeoutError';
export const isClientError = (value: unknown): value is ClientError => kindOf(value) === 'ClientError';
