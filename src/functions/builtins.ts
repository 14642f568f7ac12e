import { PipelineFailure } from '../contract/pipeline-failure.js';
import type { HostServices, HttpRequestLike } from '../contract/pipeline.js';

/** Error codes of the host's outbound HTTP service that a failed `http-request` run reports as its own. */
const OUTBOUND_CODES = new Set(['HTTP_INVALID_URL', 'HTTP_TIMEOUT', 'HTTP_FAILED', 'RESPONSE_TOO_LARGE']);

/** Thrown by a built-in for bad settings: the message names the setting. */
export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ValidationError';
  }
}

export interface BuiltinCall {
  settings: Record<string, unknown>;
  services: HostServices;
  environment: 'server' | 'client';
  /** Aborted when the node's or the run's time is up. */
  signal: AbortSignal;
  /** Largest value a built-in may return, bytes of JSON. */
  maxBytes: number;
}

type HostBuiltin = (call: BuiltinCall) => Promise<unknown>;

function connection(pkg: string, call: BuiltinCall) {
  const { dataSourceId, dataSourceName } = call.settings;
  if (dataSourceId !== undefined && dataSourceId !== null && dataSourceId !== '') {
    if (typeof dataSourceId === 'number' && Number.isInteger(dataSourceId) && dataSourceId > 0) return call.services.dataSources.connect(dataSourceId);
    if (typeof dataSourceId === 'string' && /^\d+$/.test(dataSourceId)) return call.services.dataSources.connect(Number(dataSourceId));
    throw new SettingsError(`${pkg}: settings.dataSourceId must be a positive integer, got ${JSON.stringify(dataSourceId)}`);
  }
  if (typeof dataSourceName === 'string' && dataSourceName.trim() !== '') return call.services.dataSources.connect(dataSourceName);
  throw new SettingsError(`${pkg}: settings.dataSourceId or settings.dataSourceName is required`);
}

function entryId(pkg: string, value: unknown): number {
  const id = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof id !== 'number' || !Number.isInteger(id) || id <= 0)
    throw new SettingsError(`${pkg}: settings.id must be a positive integer, got ${JSON.stringify(value)}`);
  return id;
}

function dataObject(pkg: string, value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SettingsError(`${pkg}: settings.data must be an object`);
  return value as Record<string, unknown>;
}

function defined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Built-ins that are trusted host code (design §6). `if`, `set`, `return`, `log` and `script` are engine steps (runner.ts). */
export const HOST_BUILTINS: Readonly<Record<string, HostBuiltin>> = {
  'read-datasource': async (call) => {
    const { where, order, limit, offset } = call.settings;
    const records = await connection('read-datasource', call).find(defined({ where, order, limit, offset }));
    return { records };
  },
  'insert-entry': async (call) => ({ entry: await connection('insert-entry', call).insert(dataObject('insert-entry', call.settings.data)) }),
  'update-entry': async (call) => {
    const conn = connection('update-entry', call);
    return { entry: await conn.update(entryId('update-entry', call.settings.id), dataObject('update-entry', call.settings.data)) };
  },
  'delete-entry': async (call) => {
    const id = entryId('delete-entry', call.settings.id);
    await connection('delete-entry', call).removeById(id);
    return { deleted: { id } };
  },
  'send-notification': async (call) => {
    const { data, scope, status, pushNotification, orderAt } = call.settings;
    const input = defined({ data: dataObject('send-notification', data), scope, status, pushNotification, orderAt });
    return { notification: await call.services.notifications.create(input) };
  },
  'http-request': async (call) => {
    if (call.environment !== 'server' || !call.services.http) throw new SettingsError('http-request runs on the server only');
    const { url, method, headers, body } = call.settings;
    if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) throw new SettingsError('http-request: settings.url must be an http(s) URL');
    if (method !== undefined && (typeof method !== 'string' || !/^[A-Za-z]+$/.test(method)))
      throw new SettingsError('http-request: settings.method must be an HTTP method');
    if (
      headers !== undefined &&
      (headers === null || typeof headers !== 'object' || Array.isArray(headers) || Object.values(headers).some((v) => typeof v !== 'string'))
    )
      throw new SettingsError('http-request: settings.headers must be an object of strings');
    const request: HttpRequestLike = defined({
      url,
      method: method?.toUpperCase(),
      headers: headers as Record<string, string> | undefined,
      body,
      signal: call.signal,
      maxResponseBytes: call.maxBytes,
    }) as HttpRequestLike;
    try {
      return { response: await call.services.http(request) };
    } catch (error) {
      // The host's outbound failures name their cause (RESPONSE_TOO_LARGE, HTTP_TIMEOUT, …): the run reports that code.
      const e = error as { code?: unknown; name?: unknown; message?: unknown };
      if (typeof e?.code === 'string' && OUTBOUND_CODES.has(e.code))
        throw new PipelineFailure(e.code, typeof e.name === 'string' && e.name !== 'Error' ? e.name : 'HttpRequestError', String(e.message));
      throw error;
    }
  },
};
