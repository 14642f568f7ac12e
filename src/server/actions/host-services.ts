/** HostServices of server runs: the backend's own data sources, notifications and outbound HTTP. */
import type { HostServices } from '../../contract/pipeline.js';
import type { ServerContext } from '../context.js';
import type { DataSourceService } from '../data-sources/service.js';
import type { NotificationService } from '../notifications/service.js';
import { assertRunLive } from '../store/run-liveness.js';
import { DEFAULT_OUTBOUND, outboundRequest, type OutboundLimits } from './outbound-http.js';

export interface RunScope {
  appId: number;
  organizationId: number;
  /** Aborted when the run ends: its outbound requests are cancelled, no data source call starts and no write commits. */
  signal?: AbortSignal;
  /** The run's queue row: a write commits only while the row says the run is going (store/run-liveness.ts). */
  row?: { id: number; claimedBy: string };
  /** How many log-triggered runs led to this one (0 unless it was triggered by a log). */
  chain?: number;
}

/** The backend's services a server run reaches (built by startServer, server/services.ts). */
export interface RunHosts {
  dataSources: Pick<DataSourceService, 'connect'>;
  notifications: Pick<NotificationService, 'create'>;
}

/** A run acts with the rights of its app (the data source access rules apply). */
export function serverHostServices(ctx: ServerContext, hosts: RunHosts, scope: RunScope): HostServices {
  const run = { signal: scope.signal, row: scope.row };
  const caller = { kind: 'app' as const, appId: scope.appId, organizationId: scope.organizationId, chain: scope.chain, run };
  return {
    dataSources: { connect: (idOrName) => hosts.dataSources.connect(caller, idOrName) },
    notifications: {
      create: async (input) => {
        assertRunLive(run);
        return hosts.notifications.create(scope.appId, input, { run });
      },
    },
    http: (request) => {
      // Cancelled when the run ends (scope.signal) or the node's time is up (request.signal).
      const signals = [scope.signal, request.signal].filter((s): s is AbortSignal => s !== undefined);
      const cap = ctx.limits.outboundResponseBytes ?? DEFAULT_OUTBOUND.maxResponseBytes;
      const limits: OutboundLimits = {
        timeoutMs: ctx.limits.outboundTimeoutMs ?? DEFAULT_OUTBOUND.timeoutMs,
        maxResponseBytes: Math.min(cap, request.maxResponseBytes ?? cap),
        privateNetworks: ctx.limits.outboundPrivateNetworks,
      };
      return outboundRequest(request, limits, signals.length ? AbortSignal.any(signals) : undefined);
    },
  };
}
