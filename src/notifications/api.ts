import type { ClientContext } from '../core/context.js';

/** Client.Notifications (filled in by its issue). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface NotificationsApi {}

export function createNotificationsApi(_ctx: ClientContext): NotificationsApi {
  return {};
}
