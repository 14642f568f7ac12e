/** HostServices of server runs: the backend's own data sources, notifications and outbound HTTP. */
import type { HostServices } from '../../pipeline/types.js';
import type { ServerContext } from '../context.js';
import { outboundRequest } from './outbound-http.js';

export interface RunScope {
  appId: number;
  organizationId: number;
  signal?: AbortSignal;
}

function unavailable(what: string): never {
  throw new Error(`${what} is not available on this backend yet`);
}

export function serverHostServices(_ctx: ServerContext, scope: RunScope): HostServices {
  return {
    dataSources: { connect: () => unavailable('The data source service') },
    notifications: { create: async () => unavailable('The notification service') },
    http: (request) => outboundRequest(request, undefined, scope.signal),
  };
}
