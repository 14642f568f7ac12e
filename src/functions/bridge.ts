import type { DataSourceConnectionLike, HostServices } from '../contract/pipeline.js';

const CONNECTION_METHODS = new Set<keyof DataSourceConnectionLike>(['find', 'findOne', 'findById', 'insert', 'update', 'removeById', 'query', 'commit']);

/**
 * Answers the guest's bridged `Client` calls (`dataSources.<method>`, `notifications.create`)
 * with the host services. Arguments arrive as parsed JSON; nothing else of the host is reachable.
 */
export function createBridge(services: HostServices): (op: string, args: unknown[]) => Promise<unknown> {
  return async (op, args) => {
    if (op === 'notifications.create') return services.notifications.create(objectArg(args[0], 'Notifications.create(input)'));
    const [area, method] = op.split('.', 2) as [string, keyof DataSourceConnectionLike];
    if (area === 'dataSources' && CONNECTION_METHODS.has(method)) {
      const [idOrName, ...rest] = args;
      if (!((typeof idOrName === 'number' && Number.isInteger(idOrName) && idOrName > 0) || (typeof idOrName === 'string' && idOrName !== '')))
        throw new TypeError('DataSources.connect(idOrName) needs a data source id or name');
      const conn = services.dataSources.connect(idOrName);
      const fn = conn[method] as (...a: unknown[]) => Promise<unknown>;
      return fn.apply(conn, rest);
    }
    throw new TypeError(`Unknown host call ${op}`);
  };
}

function objectArg(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`${what} needs an object`);
  return value as Record<string, unknown>;
}
