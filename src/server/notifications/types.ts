/** Shapes of the notification backend (REST bodies and service results). */

import type { Notification, NotificationStatus, PushNotification, PushPayload } from '../../contract/notifications.js';

// The wire shapes are the client's (src/contract/notifications.ts).
export type { Notification, NotificationStatus, PushPayload };
export type PushNotificationSpec = PushNotification;
export const NOTIFICATION_STATUSES: readonly NotificationStatus[] = ['draft', 'published', 'scheduled'];

export type JsonObject = Record<string, unknown>;

/** Validated create input. */
export interface NotificationCreate {
  data: JsonObject;
  scope: JsonObject[] | null;
  status: NotificationStatus;
  /** ISO; undefined means now. */
  orderAt: string | undefined;
  pushNotification: PushNotificationSpec | null;
}

/** Validated update input: undefined = unchanged. */
export interface NotificationUpdate {
  data?: JsonObject;
  extendData: boolean;
  scope?: JsonObject[] | null;
  status?: NotificationStatus;
  orderAt?: string;
  pushNotification?: PushNotificationSpec | null;
}

export type OrderField = 'id' | 'createdAt' | 'updatedAt' | 'orderAt';

/** Who is asking: studio tokens see every status, everyone else only published notifications. */
export interface Viewer {
  studio: boolean;
}

export interface ListQuery {
  limit: number;
  offset: number;
  order: OrderField;
  direction: 'ASC' | 'DESC';
  count: boolean;
  includeDeleted: boolean;
  /** A sift query on the notification (partial-document semantics). */
  where?: JsonObject;
  /** Scope objects to fetch for: notifications whose scope matches one of them, plus broadcasts. */
  scope?: JsonObject[];
  /** The end user's record: notifications whose scope matches it, plus broadcasts. */
  user?: JsonObject;
  recipientId?: string;
  /** Only notifications `recipientId` has not read. */
  unread: boolean;
}

export interface PushSubscriptionRecord {
  id: number;
  appId: number;
  userId: number | null;
  /** The user record given at registration, used to match notification scopes. */
  user: JsonObject | null;
  device: string;
  platform: string;
  ipAddress: string;
  token: string;
  /** The device's recipient id (GUID): its read receipts drive the automatic badge. */
  uuid: string;
  createdAt: string;
  updatedAt: string;
}

export type DeliveryState = 'pending' | 'sending' | 'sent' | 'failed' | 'cancelled';

export interface DeliveryAttempt {
  attempt: number;
  at: string;
  ok: boolean;
  error: string | null;
}

export interface Delivery {
  id: number;
  notificationId: number;
  subscriptionId: number;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: string;
  sentAt: string | null;
  badge: number | null;
  lastError: string | null;
  payload: PushPayload;
  history: DeliveryAttempt[];
}

/** One push handed to a sender. */
export interface PushMessage {
  /** The outbox row id: stable across retries (senders may use it as an idempotency key / Web Push topic). */
  deliveryId: number;
  attempt: number;
  appId: number;
  notificationId: number;
  subscription: PushSubscriptionRecord;
  payload: PushPayload & { badge: number; notificationId: number };
}

/**
 * Delivers pushes. Resolve when the push service accepted the message; throw
 * to fail the attempt (retried with backoff). An error with `permanent: true`
 * (e.g. the subscription is gone) is not retried; one with `subscriptionGone: true` also removes the
 * subscription, so later notifications stop targeting it.
 */
export interface PushSender {
  send(message: PushMessage): Promise<void>;
  /** VAPID public key browsers subscribe with, when the sender uses Web Push. */
  publicKey?(): Promise<string | undefined>;
}

export class PushSendError extends Error {
  constructor(
    message: string,
    readonly permanent = false,
    /** The push service says the subscription no longer exists (Web Push 404/410): it is removed, with its other pending pushes. */
    readonly subscriptionGone = false,
  ) {
    super(message);
    this.name = 'PushSendError';
  }
}
