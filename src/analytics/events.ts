import { ClientError } from '../http/errors.js';
import type { AnalyticsData, AnalyticsKind } from './types.js';

/** Largest event data accepted, characters of JSON. */
export const MAX_EVENT_CHARS = 16_384;

const KINDS: readonly AnalyticsKind[] = ['pageView', 'event'];

export function checkKind(type: unknown): AnalyticsKind {
  if (!KINDS.includes(type as AnalyticsKind))
    throw new ClientError('INVALID_ANALYTICS_TYPE', `track() type must be 'event' or 'pageView', got ${JSON.stringify(type) ?? String(type)}`);
  return type as AnalyticsKind;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A JSON copy of the caller's data (so later changes by the caller do not alter the recorded event). */
function jsonCopy(data: Record<string, unknown>, what: string): AnalyticsData {
  let text: string;
  try {
    text = JSON.stringify(data);
  } catch (error) {
    throw new ClientError('INVALID_ANALYTICS_DATA', `${what} data must be JSON-serializable: ${(error as Error).message}`);
  }
  if (text.length > MAX_EVENT_CHARS)
    throw new ClientError('ANALYTICS_EVENT_TOO_LARGE', `${what} data is ${text.length} characters of JSON, over the ${MAX_EVENT_CHARS} limit`);
  return JSON.parse(text) as AnalyticsData;
}

/** Validates the data of a `kind` event and returns a copy. */
export function checkData(kind: AnalyticsKind, data: unknown): AnalyticsData {
  if (kind === 'pageView') {
    if (data === undefined || data === null) return {};
    if (typeof data === 'string') return jsonCopy({ label: data }, 'pageView()');
    if (!isPlainObject(data)) throw new ClientError('INVALID_ANALYTICS_DATA', 'pageView() takes a label string or a data object');
    return jsonCopy(data, 'pageView()');
  }
  if (!isPlainObject(data)) throw new ClientError('INVALID_ANALYTICS_DATA', 'event() takes a data object with category and action');
  for (const field of ['category', 'action'] as const) {
    if (typeof data[field] !== 'string' || (data[field] as string).trim() === '')
      throw new ClientError('INVALID_ANALYTICS_DATA', `event() data.${field} must be a non-empty string`);
  }
  return jsonCopy(data, 'event()');
}
