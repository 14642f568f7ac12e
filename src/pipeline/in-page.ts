/**
 * Page mode of a script node or custom function (debug in page, docs/pipeline.md): the node's code is a
 * function of the host page (`RunPipelineOptions.inPage`), called with JSON copies of its evaluated settings,
 * of the run's context and of the loop's current item; what it returns is merged into the context as in the
 * sandbox (src/sandbox/guest.ts `call`), and the changes it made to its context copy are copied back, so
 * later templates, conditions and loops see the same context as after a sandboxed call. Only the call itself
 * runs outside QuickJS.
 */
import type { Session } from '../sandbox/session.js';
import { PipelineFailure } from '../contract/pipeline-failure.js';
import { exceedsBytes } from './limits.js';
import type { HostServices, InPageClient, InPageFunction } from '../contract/pipeline.js';

export interface InPageCall {
  session: Session;
  fn: InPageFunction;
  /** Largest JSON (bytes) copied in either direction: the run's `resultBytes`. */
  maxBytes: number;
  services: HostServices;
  /** Waits for the call, bounded by the node's deadline (the runner's `awaitHost`). */
  wait<T>(start: () => Promise<T>): Promise<T>;
}

const METHODS = ['find', 'findOne', 'findById', 'insert', 'update', 'removeById', 'query', 'commit'] as const;

/** The `Client` of a script node in page mode: the sandbox's two bridged services, answered by the same host services. */
export function inPageClient(services: HostServices): InPageClient {
  const connect = (idOrName: number | string) => {
    const connection = services.dataSources.connect(idOrName);
    const bound = Object.fromEntries(METHODS.map((m) => [m, (...args: unknown[]) => (connection[m] as (...a: unknown[]) => Promise<unknown>)(...args)]));
    return Object.freeze(bound) as unknown as ReturnType<HostServices['dataSources']['connect']>;
  };
  return Object.freeze({
    DataSources: Object.freeze({ connect }),
    Notifications: Object.freeze({ create: (input: Record<string, unknown>) => services.notifications.create(input) }),
  });
}

/** Calls the page function of the current node (its settings already prepared by the runner), applies its result and returns it (as JSON made it). */
export async function callInPage({ session: s, fn, maxBytes, services, wait }: InPageCall): Promise<unknown> {
  const copyOut = (helper: 'settings' | 'context' | 'current', what: string): unknown => {
    const text = s.string(helper, maxBytes);
    if (text === '!' || exceedsBytes(text, maxBytes))
      throw new PipelineFailure('FUNCTION_FAILED', 'ValidationError', `The ${what} is larger than ${maxBytes} bytes of JSON`);
    return text === '' ? undefined : JSON.parse(text);
  };
  const settings = (copyOut('settings', 'settings') ?? {}) as Record<string, unknown>;
  const context = (copyOut('context', 'context') ?? {}) as Record<string, unknown>;
  const current = (copyOut('current', 'current item') ?? {}) as { i?: unknown; x?: number };
  const before = Object.keys(context);
  // As in the sandbox, where the function changes the live context: what it changed stays, also when it throws.
  const adopt = () => {
    const deleted = before.filter((key) => !Object.hasOwn(context, key));
    s.void('adopt', json(context, 'context') || '{}', JSON.stringify(deleted));
  };
  let value: unknown;
  try {
    value = await wait(() => Promise.resolve(fn(settings, context, inPageClient(services), current.i, current.x)));
  } catch (error) {
    const failure = guestFailure(error);
    if (!failure.fatal) {
      try {
        adopt();
      } catch {
        /* the node fails with its own error */
      }
    }
    throw failure;
  }
  const result = json(value, 'returned value');
  if (exceedsBytes(result, maxBytes))
    throw new PipelineFailure('FUNCTION_FAILED', 'ResultTooLargeError', `The returned value is larger than ${maxBytes} bytes of JSON`);
  adopt();
  s.void('absorb', result);
  return result === '' ? undefined : JSON.parse(result);
}

/** What a page function threw, as the sandbox reports a guest error (its name if it is an identifier, else `Error`). */
function guestFailure(error: unknown): PipelineFailure {
  if (error instanceof PipelineFailure) return error;
  const e = error as { name?: unknown; message?: unknown } | null;
  const isError = error instanceof Error;
  const name = isError && typeof e?.name === 'string' && /^[A-Za-z_$][\w$]{0,60}$/.test(e.name) ? e.name : 'Error';
  const message = isError ? String(e?.message ?? '') : typeof error === 'object' && error !== null ? safeJson(error) : String(error);
  return new PipelineFailure('GUEST_ERROR', name, message.slice(0, MAX_ERROR_TEXT));
}

const MAX_ERROR_TEXT = 2000;
const safeJson = (v: unknown) => {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

function json(v: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = v === undefined ? '' : JSON.stringify(v);
  } catch (error) {
    throw new PipelineFailure('FUNCTION_FAILED', 'TypeError', `The ${what} cannot be serialized to JSON: ${(error as Error).message}`);
  }
  return text ?? '';
}
