import type { ClientContext } from '../core/context.js';

/** Client.DataSources (filled in by its issue). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface DataSourcesApi {}

export function createDataSourcesApi(_ctx: ClientContext): DataSourcesApi {
  return {};
}
