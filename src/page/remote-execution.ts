import type { ClientContext } from '../core/context.js';

/** What a screen registers to answer screen-targeted actions: gets the payload, returns the result. */
export type RemoteExecutionHandler = (payload: Record<string, unknown>, context: Record<string, unknown>) => unknown;

export function setRemoteHandler(ctx: ClientContext, handler: RemoteExecutionHandler | undefined): void {
  ctx.runtime.remoteHandler = handler;
}

/** The handler this screen registered, if any. */
export function remoteHandlerOf(ctx: ClientContext): RemoteExecutionHandler | undefined {
  return ctx.runtime.remoteHandler;
}
