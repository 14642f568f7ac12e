import type { ClientUser } from './user.js';

/** Public shapes of Client.Notifications (docs/notifications.md). */

export type NotificationStatus = 'draft' | 'published' | 'scheduled';

/** A scope object: key/value filters matched against a user record; values may use sift operators (`$in`, …). */
export type NotificationScope = Record<string, unknown>;

export interface PushPayload {
  title: string;
  body: string;
  /** A fixed badge; without it each device gets its recipient's unread count. */
  badge?: number;
  [key: string]: unknown;
}

export interface PushNotification {
  payload: PushPayload;
  /** Subscription ids to target; without it every subscription of the users in scope. */
  subscriptions?: number[];
  /** Unix time in seconds before which nothing is sent. */
  delayUntilTimestamp?: number;
}

export interface Notification {
  id: number;
  appId: number;
  data: Record<string, unknown>;
  /** Absent for broadcasts. */
  scope?: NotificationScope[];
  status: NotificationStatus;
  /** ISO time: ordering, and publication time of a scheduled notification. */
  orderAt: string;
  pushNotification?: PushNotification;
  publishedAt: string | null;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
  /** Present when listed for a `recipientId`: when it was read, or null. */
  readAt?: string | null;
}

/** Time as Unix seconds, an ISO 8601 string or a Date. */
export type TimeInput = number | string | Date;

export interface NotificationInput {
  data: Record<string, unknown>;
  /** One scope object or several; leave out for a broadcast. */
  scope?: NotificationScope | NotificationScope[] | null;
  /** Default draft; scheduled needs orderAt. */
  status?: NotificationStatus;
  /** Default now. */
  orderAt?: TimeInput;
  pushNotification?: PushNotification | null;
}

export interface NotificationChanges {
  data?: Record<string, unknown>;
  /** true merges `data` into the stored data (top-level keys); false (default) replaces it. */
  extendData?: boolean;
  /** null makes it a broadcast. */
  scope?: NotificationScope | NotificationScope[] | null;
  status?: NotificationStatus;
  orderAt?: TimeInput;
  /** null removes it. */
  pushNotification?: PushNotification | null;
}

export type NotificationOrder = 'id' | 'createdAt' | 'updatedAt' | 'orderAt';

export interface NotificationFilter {
  /** A sift query on the notification; nested objects match partially (`{ data: { topic: 'x' } }`). */
  where?: Record<string, unknown>;
  /** Notifications whose scope matches one of these, plus broadcasts. */
  scope?: NotificationScope | NotificationScope[];
  /** The user record scopes are matched against; default the configured `user`; null for none. */
  user?: ClientUser | null;
  /** Include soft-deleted notifications (default false). */
  includeDeleted?: boolean;
  /** Adds `readAt` for this recipient (GUID). */
  recipientId?: string;
  /** Only notifications `recipientId` has not read. */
  unread?: boolean;
  signal?: AbortSignal;
}

export interface ListOptions extends NotificationFilter {
  /** Default 100, at most 1000. */
  limit?: number;
  offset?: number;
  /** Default orderAt. */
  order?: NotificationOrder;
  /** Default DESC. */
  direction?: 'ASC' | 'DESC' | 'asc' | 'desc';
}

export interface PushSubscription {
  id: number;
  appId: number;
  userId: number | null;
  user: Record<string, unknown> | null;
  device: string;
  platform: string;
  ipAddress: string;
  token: string;
  /** The recipient id (GUID) of the device. */
  uuid: string;
  createdAt: string;
  updatedAt: string;
}

export interface SubscribeOptions {
  /**
   * A device push token obtained elsewhere (a native shell, FCM/APNs): registered as is,
   * without the browser Push API.
   */
  token?: string;
  /** Default `web` (browser Push API). */
  platform?: string;
  /** Default the browser's user agent. */
  device?: string;
  /** The recipient id (GUID) of this device; default `recipientId()`. */
  uuid?: string;
  /** The user record push scopes are matched against; default the configured `user`. */
  user?: ClientUser | null;
  /** The service worker to subscribe with: a registration, or a script URL to register; default the page's registration. */
  serviceWorker?: ServiceWorkerRegistration | string;
  signal?: AbortSignal;
}
