import type { ClientContext } from '../core/context.js';

/** What a screen registers to answer screen-targeted actions: gets the payload, returns the result. */
export type RemoteExecutionHandler = (payload: Record<string, unknown>, context: Record<string, unknown>) => unknown;

const handlers = new WeakMap<ClientContext, RemoteExecutionHandler>();

export function setRemoteHandler(ctx: ClientContext, handler: RemoteExecutionHandler | undefined): void {
  if (handler) handlers.set(ctx, handler);
  else handlers.delete(ctx);
}

/** The handler this screen registered, if any. */
export function remoteHandlerOf(ctx: ClientContext): RemoteExecutionHandler | undefined {
  return handlers.get(ctx);
}
