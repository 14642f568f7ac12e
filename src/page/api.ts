import type { ClientContext } from '../core/context.js';

/** Client.Page (filled in by its issue). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface PageApi {}

export function createPageApi(_ctx: ClientContext): PageApi {
  return {};
}
