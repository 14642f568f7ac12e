import type { ClientContext } from '../core/context.js';

/** Client.Functions (filled in by its issue). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface FunctionsApi {}

export function createFunctionsApi(_ctx: ClientContext): FunctionsApi {
  return {};
}
