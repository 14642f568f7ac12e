export { createClient, type Client } from './client.js';
export type { ClientConfig, ClientUser, Environment, ResolvedConfig, RuntimeLimits } from './core/config.js';
export { DEFAULT_LIMITS } from './core/config.js';
export type { Logger } from './core/logger.js';
export type { AppInfo } from './core/app-info.js';
export type { Region } from './http/regions.js';
export type { RequestOptions, Transport, QueryValue } from './http/transport.js';
export {
  ApiError,
  ClientError,
  NetworkError,
  RuntimeError,
  TimeoutError,
  isApiError,
  isClientError,
  isNetworkError,
  isRuntimeError,
  isTimeoutError,
} from './http/errors.js';
export type { ActionsApi, TasksApi } from './actions/api.js';
export type { RunError, RunHandle, RunId, RunInfo, RunRef, RunStatus } from './contract/actions.js';
export type { TraceEntry, TruncatedValue } from './contract/pipeline.js';
export type { ClientStatus } from './storage/status.js';
export type { AnalyticsApi, AnalyticsData, AnalyticsEvent, AnalyticsEventType, AnalyticsKind, AutoFields, EventData } from './analytics/api.js';
export type { DataSourcesApi, DataSourceConnection } from './data-sources/api.js';
export type {
  CommitBody,
  CommitEntry,
  CommitItemError,
  CommitOptions,
  CommitResult,
  CreateDataSourceInput,
  DataSource,
  DataSourceAccessRule,
  DataSourceChanges,
  DataSourceEntry,
  DataSourceHook,
  DataSourceHookEvent,
  DataSourceOperation,
  DataSourceVersion,
  EntryData,
  FilterCondition,
  FindQuery,
  JoinDefinition,
  Pagination,
  QueryBody,
  QueryResult,
  RestoreResult,
  SelectQueryBody,
  SelectResult,
  SortDirection,
  Where,
} from './contract/data-sources.js';
export type { FunctionsApi } from './functions/api.js';
export type { MediaApi } from './media/api.js';
export type { MediaFile, MediaFolder, MediaPlace } from './contract/media.js';
export type { Organization, User, UserApi } from './user/api.js';
export type { NotificationsApi } from './notifications/api.js';
export type {
  ListOptions as NotificationListOptions,
  Notification,
  NotificationChanges,
  NotificationFilter,
  NotificationInput,
  NotificationOrder,
  NotificationScope,
  NotificationStatus,
  PushNotification,
  PushPayload,
  PushSubscription,
  SubscribeOptions,
  TimeInput,
} from './contract/notifications.js';
export type { PageApi } from './page/api.js';
