import type { ClientContext } from '../core/context.js';
import { ClientError } from '../http/errors.js';
import { createDataSourceConnection, type DataSourceConnection } from './connection.js';
import { addressOf, checkId, checkObject } from './paths.js';
import type { CreateDataSourceInput, DataSource, DataSourceChanges } from '../contract/data-sources.js';

/** Client.DataSources. */
export interface DataSourcesApi {
  /**
   * Data sources of the configured app (or of `appId` / `organizationId`; with neither and no app configured,
   * of the token's organization). `type` keeps one type (filtered by the backend; null: untyped only).
   */
  get(options?: { appId?: number; organizationId?: number; type?: string | null }): Promise<DataSource[]>;
  getById(idOrName: number | string): Promise<DataSource>;
  /** Creates a data source of the configured app (or of `appId` / `organizationId`). */
  create(input: CreateDataSourceInput): Promise<DataSource>;
  update(idOrName: number | string, changes: DataSourceChanges): Promise<DataSource>;
  /** Removes the data source with all its entries, versions and files. */
  delete(idOrName: number | string): Promise<void>;
  /** A connection to the entries of a data source (resolves at once; the first call reports a missing one). */
  connect(idOrName: number | string): Promise<DataSourceConnection>;
}

export function createDataSourcesApi(ctx: ClientContext): DataSourcesApi {
  const scope = (options: { appId?: number; organizationId?: number }) => {
    if (options.appId !== undefined && options.organizationId !== undefined)
      throw new ClientError('INVALID_ARGUMENT', 'Give appId or organizationId, not both');
    if (options.organizationId !== undefined) return { organizationId: checkId(options.organizationId, 'organizationId') };
    return { appId: options.appId !== undefined ? checkId(options.appId, 'appId') : ctx.appId() };
  };
  const path = (idOrName: number | string) => {
    const { segment, query } = addressOf(idOrName);
    return { path: `v1/data-sources/${segment}`, query };
  };
  return {
    async get(options = {}) {
      const { type } = options;
      const query = (options.appId ?? options.organizationId ?? ctx.config().appId) ? scope(options) : {};
      const { dataSources } = await ctx.http.request<{ dataSources: DataSource[] }>('GET', 'v1/data-sources', { query: { ...query, type: type ?? undefined } });
      return type === null ? dataSources.filter((d) => d.type === null) : dataSources;
    },
    async getById(idOrName) {
      const { path: p, query } = path(idOrName);
      return (await ctx.http.request<{ dataSource: DataSource }>('GET', p, { query })).dataSource;
    },
    async create(input) {
      const { appId, organizationId, ...body } = checkObject(input, 'The data source') as unknown as CreateDataSourceInput;
      if (typeof body.name !== 'string' || body.name.trim() === '') throw new ClientError('INVALID_ARGUMENT', 'A data source needs a non-empty name');
      const query = scope({ appId, organizationId });
      return (await ctx.http.request<{ dataSource: DataSource }>('POST', 'v1/data-sources', { query, json: body })).dataSource;
    },
    async update(idOrName, changes) {
      const { path: p, query } = path(idOrName);
      checkObject(changes, 'The changes');
      return (await ctx.http.request<{ dataSource: DataSource }>('PUT', p, { query, json: changes })).dataSource;
    },
    async delete(idOrName) {
      const { path: p, query } = path(idOrName);
      await ctx.http.request('DELETE', p, { query });
    },
    async connect(idOrName) {
      return createDataSourceConnection(ctx, idOrName);
    },
  };
}

export { createDataSourceConnection, type DataSourceConnection } from './connection.js';
