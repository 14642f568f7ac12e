import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';
import { remoteHandlerOf, setRemoteHandler, type RemoteExecutionHandler } from './remote-execution.js';

export type { RemoteExecutionHandler } from './remote-execution.js';

/** Client.Page: the screen this client runs on. */
export interface PageApi {
  /**
   * Registers the handler of screen-targeted actions (`pageId`): when such an
   * action runs (in the backend's sandbox, or on this device), the handler gets
   * the payload and its return value is the run's result. One handler per
   * screen; a new call replaces it. Returns a function that removes it.
   */
  onRemoteExecution(handler: RemoteExecutionHandler): () => void;
}

export function createPageApi(ctx: ClientContext): PageApi {
  return {
    onRemoteExecution(handler) {
      if (typeof handler !== 'function') throw new ClientError('INVALID_ARGUMENT', 'onRemoteExecution needs a function');
      setRemoteHandler(ctx, handler);
      return () => {
        if (remoteHandlerOf(ctx) === handler) setRemoteHandler(ctx, undefined);
      };
    },
  };
}
