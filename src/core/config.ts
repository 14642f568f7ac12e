import type { ClientUser } from '../contract/user.js';

export type { ClientUser };
import type { Region } from '../http/regions.js';
import { ClientError } from '../http/errors.js';
import type { Logger } from './logger.js';

/** Limits that apply to action runs (design §9), and how long a page load waits for the actions list. */
export interface RuntimeLimits {
  /** Time limit of one run, ms (default 120 000). */
  runTimeoutMs: number;
  /** Maximum payload size, characters of JSON (default 2048). */
  payloadChars: number;
  /** Maximum result size, bytes of JSON (default 6 MB). */
  resultBytes: number;
  /** Manual runs per app per minute (default 60). */
  runsPerMinute: number;
  /**
   * How long a page load waits, at most, for the backend to confirm or replace the cached actions list
   * (If-None-Match) before its first analytics event is matched against the cached list, ms (default 500).
   */
  actionsRevalidateMs: number;
}

export const DEFAULT_LIMITS: Readonly<RuntimeLimits> = Object.freeze({
  runTimeoutMs: 120_000,
  payloadChars: 2048,
  resultBytes: 6 * 1024 * 1024,
  runsPerMinute: 60,
  actionsRevalidateMs: 500,
});

export type Environment = 'live' | 'viewer';

export interface ClientConfig {
  /** Backend base URL; overrides `region`. */
  baseUrl?: string;
  /** eu (default), us or ca. */
  region?: Region;
  /** Base URL of each region, to point a region at another host. */
  regionUrls?: Partial<Record<Region, string>>;
  appId?: number;
  organizationId?: number;
  /** Sent as the `Auth-token` header of every request. */
  authToken?: string;
  /** The screen this client runs on. */
  pageId?: number;
  /** `live` (default): published actions only. `viewer`: working copies. */
  environment?: Environment;
  user?: ClientUser;
  fetch?: typeof fetch;
  /** Default request timeout, ms (default 30 000). */
  timeout?: number;
  /** Current time in ms (default `Date.now`); tests inject a fake clock. */
  clock?: () => number;
  limits?: Partial<RuntimeLimits>;
  /**
   * How long a run may use the copy of an action this client fetched or revalidated, ms (default 1000; 0: every run
   * asks the backend). Older copies are revalidated (If-None-Match → 304). docs/actions.md "Action copies on the device".
   */
  actionMaxAgeMs?: number;
  /** Where the lazily loaded parts (engine chunk, QuickJS wasm) are served from; default: next to client.js. */
  assetsUrl?: string;
  logger?: Logger;
}

export interface ResolvedConfig extends Omit<ClientConfig, 'limits' | 'clock' | 'environment' | 'actionMaxAgeMs'> {
  environment: Environment;
  actionMaxAgeMs: number;
  clock: () => number;
  limits: RuntimeLimits;
}

const ENVIRONMENTS: readonly Environment[] = ['live', 'viewer'];
const REGIONS: readonly Region[] = ['eu', 'us', 'ca'];

/** Bad configuration: a ClientError `INVALID_CONFIG` naming the field. */
const invalid = (message: string) => new ClientError('INVALID_CONFIG', message);

function checkId(name: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw invalid(`config.${name} must be a positive integer, got ${JSON.stringify(value)}`);
}

/** Validates and fills in defaults. Throws a ClientError `INVALID_CONFIG` naming the bad field. */
export function resolveConfig(config: ClientConfig): ResolvedConfig {
  checkId('appId', config.appId);
  checkId('organizationId', config.organizationId);
  checkId('pageId', config.pageId);
  if (config.region !== undefined && !REGIONS.includes(config.region))
    throw invalid(`config.region must be one of ${REGIONS.join(', ')}, got ${JSON.stringify(config.region)}`);
  if (config.environment !== undefined && !ENVIRONMENTS.includes(config.environment))
    throw invalid(`config.environment must be live or viewer, got ${JSON.stringify(config.environment)}`);
  if (config.authToken !== undefined && typeof config.authToken !== 'string') throw invalid('config.authToken must be a string');
  if (config.baseUrl !== undefined) {
    try {
      new URL(config.baseUrl);
    } catch {
      throw invalid(`config.baseUrl is not an absolute URL: ${JSON.stringify(config.baseUrl)}`);
    }
  }
  const limits = { ...DEFAULT_LIMITS, ...(config.limits ?? {}) };
  for (const [key, value] of Object.entries(limits))
    if (typeof value !== 'number' || !(value > 0)) throw invalid(`config.limits.${key} must be a positive number`);
  const actionMaxAgeMs = config.actionMaxAgeMs ?? 1000;
  if (typeof actionMaxAgeMs !== 'number' || !(actionMaxAgeMs >= 0)) throw invalid('config.actionMaxAgeMs must be ≥ 0');
  return {
    ...config,
    actionMaxAgeMs,
    environment: config.environment ?? 'live',
    clock: config.clock ?? (() => Date.now()),
    limits,
  };
}
