/**
 * A screen-targeted action run on the device (`action.pageId`): the handler this screen registered with
 * `Client.Page.onRemoteExecution()`, in the lazy `runs` chunk (few screens have one).
 */
import type { Action } from '../contract/actions.js';
import type { RunOutcome } from '../contract/pipeline.js';
import type { ClientContext } from '../core/context.js';
import { failure, notSerializable } from './run-failure.js';

const TIMED_OUT = Symbol('timed out');

export function runScreenAction(ctx: ClientContext, action: Action, payload: Record<string, unknown>, context: Record<string, unknown>): Promise<RunOutcome> {
  const handler = ctx.runtime.remoteHandler;
  if (!handler || ctx.config().pageId !== action.pageId)
    return Promise.resolve(
      failure(
        'ScreenError',
        'SCREEN_NOT_LOADED',
        `Action "${action.name}" targets screen ${action.pageId}, which has not registered Client.Page.onRemoteExecution() here`,
      ),
    );
  return runScreenHandler(ctx, () => handler(payload, context), ctx.config().limits.runTimeoutMs);
}

/**
 * Calls a screen's handler within the run's time limit (`limits.runTimeoutMs`). A handler that has not
 * settled by then fails the run with TIMEOUT (its promise is left to settle unobserved; a handler that
 * blocks the thread synchronously cannot be stopped). The result is kept as its JSON copy, what the log
 * stores and a server run of the same action would give.
 */
async function runScreenHandler(ctx: ClientContext, call: () => unknown, limitMs: number): Promise<RunOutcome> {
  const started = ctx.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let result: unknown;
  try {
    result = await Promise.race([
      new Promise<unknown>((resolve) => resolve(call())),
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), limitMs);
      }),
    ]);
  } catch (error) {
    return failure((error as Error)?.name || 'Error', 'FUNCTION_FAILED', (error as Error)?.message ?? String(error));
  } finally {
    clearTimeout(timer);
  }
  if (result === TIMED_OUT) return { ...failure('TimeoutError', 'TIMEOUT', `The run took longer than ${limitMs} ms and was stopped`), durationMs: limitMs };
  try {
    const json = JSON.stringify(result);
    result = json === undefined ? undefined : JSON.parse(json);
  } catch (error) {
    return notSerializable(error, []);
  }
  return { ok: true, result, trace: [], durationMs: ctx.now() - started };
}
