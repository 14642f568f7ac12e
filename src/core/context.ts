import { ClientError } from '../http/errors.js';
import type { Transport } from '../http/transport.js';
import type { ResolvedConfig } from './config.js';
import type { Logger } from './logger.js';
import type { ClientRuntime } from './runtime.js';

/** What every sub-client gets: the shared transport, the live configuration, a logger and the client's state. */
export interface ClientContext {
  readonly http: Transport;
  config(): ResolvedConfig;
  /** The configured app id; a ClientError `NOT_CONFIGURED` when it is missing. */
  appId(): number;
  now(): number;
  readonly logger: Logger & { once(key: string, message: string): void };
  /** The state of this client (queues, caches, run memory), made once by createClient (src/core/runtime.ts). */
  readonly runtime: ClientRuntime;
}

export function requireAppId(config: ResolvedConfig): number {
  if (config.appId === undefined) throw new ClientError('NOT_CONFIGURED', 'No appId configured: pass it to createClient(), Client.configure() or data-app-id');
  return config.appId;
}

/** What a closed client's methods fail with (`Client.close()`). */
export const closedError = () => new ClientError('CLIENT_CLOSED', 'This client is closed');
