/**
 * The app's backend-stored custom functions kept on the device (local store `meta`, key `customFunctions`),
 * so device runs can use them offline from the last fetch. Fetched from the catalog route with
 * `?include=code` (the backend sends the code of client/any functions only). Nothing is fetched for
 * pipelines that use built-ins or functions registered on this device only.
 */
import type { ClientContext } from '../core/context.js';
import { entry } from '../core/runtime.js';
import type { RunsHost } from '../actions/runs-host.js';
import { isOnline } from '../storage/connectivity.js';
import { BUILTIN_PREFIX, type FunctionEnvironment } from './catalog.js';
import type { CustomFunctionSource } from './custom-packages.js';

export interface StoredCustomFunction extends CustomFunctionSource {
  id: number;
  name: string;
  description: string;
  environment: FunctionEnvironment;
}

interface CachedCustomFunctions {
  functions: StoredCustomFunction[];
  fetchedAt: string;
}

export interface CustomFunctionsCache {
  /**
   * The stored custom functions. Answers from memory (or the local store) and refreshes in the background
   * when older than `maxAgeMs`; waits for a fetch when nothing was ever fetched or when `need` names a
   * package missing from the list (at most once per `missRetryMs` of real time). A failed fetch falls back to the last list.
   */
  get(need?: Iterable<string>): Promise<StoredCustomFunction[]>;
  /** Fetches now, stores the list and returns it. Rejects when the fetch fails. */
  refresh(): Promise<StoredCustomFunction[]>;
  /** The next `get()` refreshes (call after adding functions on the backend). */
  invalidate(): void;
}

const STORE_KEY = 'customFunctions';
export const CUSTOM_FUNCTIONS_MAX_AGE_MS = 5 * 60_000;

/** The cache of the app configured now. In the lazy `runs` chunk: the app's local store comes from the host. */
export function customFunctionsCache(host: Pick<RunsHost, 'ctx' | 'store'>, options: { maxAgeMs?: number; missRetryMs?: number } = {}): CustomFunctionsCache {
  const { ctx } = host;
  return entry(ctx.runtime.customFunctions, ctx.appId(), () => createCache(ctx, host.store, options));
}

async function fetchCustomFunctions(ctx: ClientContext): Promise<StoredCustomFunction[]> {
  const body = await ctx.http.request<{ functions?: unknown }>('GET', `v1/apps/${ctx.appId()}/tasks/functions`, { query: { include: 'code' } });
  if (!Array.isArray(body?.functions)) throw new TypeError('The backend answered the function catalog with an unexpected shape');
  return (body.functions as StoredCustomFunction[]).filter((f) => f && typeof f.package === 'string' && !f.package.startsWith(BUILTIN_PREFIX));
}

function createCache(ctx: ClientContext, clientStore: RunsHost['store'], options: { maxAgeMs?: number; missRetryMs?: number }): CustomFunctionsCache {
  const maxAge = options.maxAgeMs ?? CUSTOM_FUNCTIONS_MAX_AGE_MS;
  const missRetry = options.missRetryMs ?? 1000;
  let current: StoredCustomFunction[] | undefined;
  let fetchedAtMs = -Infinity;
  const missedAt = new Map<string, number>();
  let loading: Promise<void> | undefined;
  let refreshing: Promise<StoredCustomFunction[]> | undefined;

  const loadStored = async () => {
    try {
      const stored = await (await clientStore()).get<CachedCustomFunctions>('meta', STORE_KEY);
      if (!current && stored && Array.isArray(stored.functions)) {
        current = stored.functions;
        fetchedAtMs = Date.parse(stored.fetchedAt) || -Infinity;
      }
    } catch (error) {
      ctx.logger.warn(`Could not read the cached custom functions: ${(error as Error)?.message ?? error}`);
    }
  };

  const cache: CustomFunctionsCache = {
    async get(need) {
      if (!current) await (loading ??= loadStored());
      const list = current;
      const missing = [...(need ?? [])].filter((pkg) => !list?.some((f) => f.package === pkg));
      // A package the last fetches did not have either is asked for again only after missRetryMs.
      const worthFetching = list === undefined || missing.some((pkg) => Date.now() - (missedAt.get(pkg) ?? -Infinity) >= missRetry);
      if (worthFetching && (list === undefined || missing.length > 0)) {
        try {
          const fresh = await cache.refresh();
          for (const pkg of missing) if (!fresh.some((f) => f.package === pkg)) missedAt.set(pkg, Date.now());
          return fresh;
        } catch (error) {
          ctx.logger.warn(`Could not load the custom functions; using the last fetched list: ${(error as Error)?.message ?? error}`);
        }
      } else if (ctx.now() - fetchedAtMs >= maxAge && isOnline() && !refreshing) {
        cache.refresh().catch((error) => ctx.logger.warn(`Could not refresh the custom functions: ${(error as Error)?.message ?? error}`));
      }
      return current ?? [];
    },
    refresh() {
      refreshing ??= (async () => {
        try {
          const functions = await fetchCustomFunctions(ctx);
          current = functions;
          fetchedAtMs = ctx.now();
          try {
            await (await clientStore()).put<CachedCustomFunctions>('meta', STORE_KEY, { functions, fetchedAt: new Date(fetchedAtMs).toISOString() });
          } catch (error) {
            ctx.logger.warn(`Could not store the custom functions on the device: ${(error as Error)?.message ?? error}`);
          }
          return functions;
        } finally {
          refreshing = undefined;
        }
      })();
      return refreshing;
    },
    invalidate() {
      fetchedAtMs = -Infinity;
      missedAt.clear();
    },
  };
  return cache;
}
