/**
 * The REST routes of the reference backend as an OpenAPI 3.1 document, served at `GET /openapi.json`.
 * test/integration/openapi.test.ts checks it against the routes registered on the Hono app, both ways.
 * Route docs with the rules behind each route: docs/data-sources.md, docs/notifications.md, docs/actions.md,
 * docs/analytics.md.
 */
import { acceptedKinds } from '../http/token-kinds.js';

type Json = Record<string, unknown>;
type Method = 'get' | 'post' | 'put' | 'delete';

interface Operation {
  summary: string;
  tag: string;
  /** Extra query parameters (name → description). */
  query?: Record<string, string>;
  /** Request body schema (JSON unless `multipart`). */
  body?: Json;
  multipart?: boolean;
  /** Success status → [description, schema?]. */
  ok: Record<number, [string, Json?]>;
  /** No `Auth-token` needed (still accepted). */
  anonymous?: boolean;
  /** Where the rules are documented. */
  see?: string;
  headers?: Record<string, string>;
  html?: boolean;
}

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const obj = (properties: Record<string, Json>, required: string[] = []): Json => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
});
const arr = (items: Json): Json => ({ type: 'array', items });
const int: Json = { type: 'integer' };
const str: Json = { type: 'string' };
const bool: Json = { type: 'boolean' };
const time: Json = { type: 'string', format: 'date-time' };
const any: Json = {};
const free: Json = { type: 'object', additionalProperties: true };
const empty: Json = { type: 'object', maxProperties: 0 };
const nullable = (schema: Json): Json => ({ anyOf: [schema, { type: 'null' }] });

const schemas: Record<string, Json> = {
  Error: obj(
    {
      error: obj({ code: { ...str, description: 'UPPER_SNAKE code (docs/errors.md)' }, message: str }, ['code', 'message']),
      message: { ...str, description: 'the same text as error.message (integration clients read it)' },
    },
    ['error', 'message'],
  ),
  App: obj({ id: int, name: str, organizationId: int, createdAt: time }, ['id', 'name', 'organizationId']),
  Organization: obj({ id: int, name: str, encryption: bool }),
  User: obj({ id: int, email: str, firstName: str, lastName: str, fullName: str }, ['id', 'email', 'firstName', 'lastName', 'fullName']),
  ApiToken: obj({
    id: int,
    appId: int,
    name: str,
    kind: { enum: ['api', 'client'] },
    token: { ...str, description: 'only in the create answer' },
    createdAt: time,
  }),
  DataSource: obj(
    {
      id: int,
      name: str,
      appCapabilities: any,
      hooks: arr(free),
      encrypted: bool,
      columns: nullable(arr(str)),
      type: nullable(str),
      public: nullable(bool),
      definition: free,
      accessRules: arr(free),
      createdAt: time,
      updatedAt: time,
      appId: nullable(int),
      organizationId: int,
    },
    ['id', 'name', 'organizationId'],
  ),
  Entry: obj({ id: int, dataSourceId: int, data: free, order: int, createdAt: time, updatedAt: time, deletedAt: nullable(time) }, [
    'id',
    'dataSourceId',
    'data',
  ]),
  Pagination: obj({ total: int, limit: int, offset: int }, ['total', 'limit', 'offset']),
  Query: obj({
    type: { enum: ['select', 'delete'] },
    where: { ...free, description: 'sift query; `$filters`, `$id`, `$createdAt`, … (docs/data-sources.md)' },
    aggregate: arr(free),
    join: any,
    attributes: arr(str),
    order: arr({ type: 'array', prefixItems: [str, { enum: ['ASC', 'DESC', 'asc', 'desc'] }] }),
    limit: int,
    offset: int,
    includePagination: bool,
    distinct: { ...bool, description: 'leave out rows equal to an earlier row (compared after attributes and joins)' },
  }),
  Commit: obj(
    {
      entries: arr(obj({ id: int, data: free, clientId: { type: ['string', 'integer'] } }, ['data'])),
      append: bool,
      delete: arr(int),
      extend: bool,
      runHooks: arr({ enum: ['insert', 'update'] }),
      returnEntries: bool,
    },
    ['entries'],
  ),
  Version: obj({
    id: int,
    dataSourceId: int,
    pageId: nullable(int),
    userId: int,
    user: free,
    createdAt: time,
    updatedAt: time,
    data: obj({ action: str, columns: arr(str), entries: obj({ count: int, key: str }) }),
  }),
  LogRecord: obj({ id: int, appId: nullable(int), dataSourceId: nullable(int), dataSourceEntryId: nullable(int), type: str, data: free, createdAt: time }),
  PushNotification: obj(
    {
      payload: obj({ title: str, body: str, badge: { type: 'integer', minimum: 0 } }, ['title', 'body']),
      subscriptions: arr(int),
      delayUntilTimestamp: { type: 'number', description: 'Unix seconds' },
    },
    ['payload'],
  ),
  Notification: obj(
    {
      id: int,
      appId: int,
      data: free,
      scope: arr(free),
      status: { enum: ['draft', 'published', 'scheduled'] },
      orderAt: time,
      pushNotification: ref('PushNotification'),
      publishedAt: nullable(time),
      createdAt: time,
      updatedAt: time,
      deletedAt: nullable(time),
      readAt: { ...nullable(time), description: 'only when listed for a recipientId' },
    },
    ['id', 'appId', 'data', 'status', 'orderAt'],
  ),
  NotificationInput: obj(
    {
      data: free,
      scope: { anyOf: [free, arr(free), { type: 'null' }] },
      status: { enum: ['draft', 'published', 'scheduled'] },
      orderAt: { type: ['number', 'string'] },
      pushNotification: nullable(ref('PushNotification')),
    },
    ['data'],
  ),
  NotificationChanges: obj({
    data: free,
    extendData: bool,
    scope: { anyOf: [free, arr(free), { type: 'null' }] },
    status: { enum: ['draft', 'published', 'scheduled'] },
    orderAt: { type: ['number', 'string'] },
    pushNotification: nullable(ref('PushNotification')),
  }),
  NotificationList: obj({
    limit: int,
    offset: int,
    order: { enum: ['id', 'createdAt', 'updatedAt', 'orderAt'] },
    direction: { enum: ['ASC', 'DESC', 'asc', 'desc'] },
    count: bool,
    includeDeleted: bool,
    recipientId: { ...str, format: 'uuid' },
    unread: bool,
    where: free,
    scope: { anyOf: [free, arr(free)] },
    user: free,
  }),
  Subscription: obj({
    id: int,
    appId: int,
    userId: nullable(int),
    user: nullable(free),
    device: str,
    platform: str,
    ipAddress: str,
    token: str,
    uuid: str,
    createdAt: time,
    updatedAt: time,
  }),
  PipelineNode: {
    type: 'object',
    description:
      'function node `{ functionPackage, settings?, functions? }`, loop `{ type: loop, items | range, functions }` or if `{ type: if, conditions, elseFunctions? }` (docs/pipeline.md)',
    additionalProperties: true,
  },
  Trigger: obj({ trigger: { enum: ['log', 'schedule', 'manual', 'analytics'] }, where: free }, ['trigger']),
  ActionInput: obj(
    {
      name: str,
      active: bool,
      frequency: nullable(str),
      timezone: str,
      environment: { enum: ['server', 'client', 'any'] },
      triggers: arr(ref('Trigger')),
      functions: arr(ref('PipelineNode')),
      pageId: nullable(int),
      missedRuns: { enum: ['coalesce', 'skip'] },
    },
    ['name'],
  ),
  Action: obj(
    {
      id: int,
      appId: int,
      name: str,
      active: bool,
      published: bool,
      publishedAt: nullable(time),
      frequency: nullable(str),
      timezone: str,
      environment: { enum: ['server', 'client', 'any'] },
      triggers: arr(ref('Trigger')),
      functions: arr(ref('PipelineNode')),
      pageId: nullable(int),
      missedRuns: { enum: ['coalesce', 'skip'] },
      lastRunAt: nullable(time),
      nextRunAt: nullable(time),
      createdAt: time,
      updatedAt: time,
    },
    ['id', 'name', 'active', 'published'],
  ),
  ActionLog: obj(
    {
      id: nullable(int),
      createdAt: time,
      type: { enum: ['app.action.completed', 'app.task.completed', 'app.task.failed', 'app.task.skipped'] },
      data: obj({
        mode: { enum: ['on-demand', 'scheduled'] },
        duration: { type: 'number' },
        actionId: int,
        result: any,
        runId: int,
        source: { enum: ['server', 'device'] },
      }),
      deviceKey: str,
    },
    ['createdAt', 'type', 'data'],
  ),
  Run: obj(
    {
      runId: { type: ['integer', 'string'], description: 'a server run id, or a device run id (dev-…)' },
      actionId: nullable(int),
      actionName: str,
      source: { enum: ['server', 'device'] },
      status: { enum: ['queued', 'running', 'completed', 'failed'] },
      queuedAt: time,
      startedAt: nullable(time),
      finishedAt: nullable(time),
      durationMs: nullable({ type: 'number' }),
      attempts: int,
      result: any,
      error: obj({ code: str, errorType: str, errorMessage: str }),
      trace: arr(free),
      logId: nullable(int),
    },
    ['runId', 'actionId', 'source', 'status', 'queuedAt', 'startedAt', 'finishedAt', 'durationMs', 'trace', 'logId'],
  ),
  FunctionDescriptor: obj({ id: int, package: str, name: str, description: str, environment: { enum: ['server', 'client', 'any'] } }, ['package', 'name']),
  Page: obj({ id: int, appId: int, name: str, script: str, published: bool, createdAt: time, updatedAt: time }),
  MediaFolder: obj(
    { id: int, name: str, parentId: nullable(int), appId: nullable(int), organizationId: int, createdAt: time, updatedAt: time, deletedAt: { type: 'null' } },
    ['id', 'name', 'organizationId'],
  ),
  MediaFile: obj(
    {
      id: int,
      name: str,
      contentType: str,
      size: { ...int, description: 'bytes' },
      url: { ...str, description: 'GET it with an Auth-token of the organization' },
      isEncrypted: bool,
      mediaFolderId: nullable(int),
      appId: nullable(int),
      organizationId: int,
      userId: nullable(int),
      createdAt: time,
      updatedAt: time,
    },
    ['id', 'name', 'contentType', 'size', 'url'],
  ),
  AnalyticsEvent: obj({ type: { enum: ['analytics.pageView', 'analytics.event', 'pageView', 'event'] }, data: free, createdAt: time }, ['type']),
};

const json = (schema: Json) => ({ 'application/json': { schema } });

const ds = 'docs/data-sources.md';
const nt = 'docs/notifications.md';
const ac = 'docs/actions.md';

/** Every route, keyed `METHOD path` with Hono-style `:params`. */
export const ROUTES: Record<string, Operation> = {
  'GET /openapi.json': { tag: 'meta', summary: 'This document', anonymous: true, ok: { 200: ['OpenAPI 3.1 document', free] } },

  // Identity of the token
  'GET /v1/user': {
    tag: 'apps',
    summary: 'The owner of the token: the named API user of an API token, the studio user of a studio token',
    see: 'docs/decisions.md',
    ok: { 200: ['The user', obj({ user: ref('User') })] },
  },
  'GET /v1/organizations': {
    tag: 'apps',
    summary: 'The organizations visible to the token (its own)',
    ok: { 200: ['Organizations', obj({ organizations: arr(ref('Organization')) })] },
  },

  // Apps, organizations, tokens
  'GET /v1/apps/:appId': { tag: 'apps', summary: 'The app of the token', ok: { 200: ['The app', obj({ app: ref('App') })] } },
  'PUT /v1/apps/:appId': {
    tag: 'apps',
    summary: 'Rename the app (studio token)',
    body: obj({ name: str }, ['name']),
    ok: { 200: ['The app', obj({ app: ref('App') })] },
  },
  'GET /v1/apps/:appId/tokens': {
    tag: 'apps',
    summary: 'API and client tokens of the app (studio token)',
    see: ds,
    ok: { 200: ['Tokens', obj({ tokens: arr(ref('ApiToken')) })] },
  },
  'POST /v1/apps/:appId/tokens': {
    tag: 'apps',
    summary: 'Create an API token, or a client token with kind client (studio token)',
    body: obj({ name: str, kind: { enum: ['api', 'client'] } }),
    ok: { 201: ['The token, with its secret', obj({ token: ref('ApiToken') })] },
  },
  'DELETE /v1/apps/:appId/tokens/:tokenId': { tag: 'apps', summary: 'Revoke an API or client token (studio token)', ok: { 200: ['Revoked', empty] } },
  'GET /v1/organizations/:organizationId': {
    tag: 'apps',
    summary: 'The organization (studio token)',
    ok: { 200: ['Organization', obj({ organization: ref('Organization') })] },
  },
  'PUT /v1/organizations/:organizationId': {
    tag: 'apps',
    summary: 'Switch file encryption for new uploads (studio token)',
    body: obj({ encryption: bool }),
    ok: { 200: ['Organization', obj({ organization: ref('Organization') })] },
  },
  'POST /v1/organizations/:organizationId/apps': {
    tag: 'apps',
    summary: 'Create another app of the organization (studio token)',
    body: obj({ name: str }, ['name']),
    ok: { 201: ['The app', obj({ app: ref('App') })] },
  },

  // Data sources
  'GET /v1/data-sources': {
    tag: 'data-sources',
    summary: "List data sources of one context (none: the token's organization)",
    see: ds,
    query: { appId: 'app context', organizationId: 'organization context', type: 'only data sources of this type, e.g. keystore' },
    ok: { 200: ['Data sources', obj({ dataSources: arr(ref('DataSource')) })] },
  },
  'POST /v1/data-sources': {
    tag: 'data-sources',
    summary: 'Create a data source (name unique per organization)',
    see: ds,
    query: { appId: 'app context', organizationId: 'organization context' },
    body: obj({ name: str, type: nullable(str), appId: int, organizationId: int }, ['name']),
    ok: { 201: ['Created', obj({ dataSource: ref('DataSource') })] },
  },
  'GET /v1/data-sources/:ds': {
    tag: 'data-sources',
    summary: 'One data source by id or URL-encoded name',
    see: ds,
    anonymous: true,
    query: { dsn: 'treat an all-digit :ds as a name' },
    ok: { 200: ['Data source', obj({ dataSource: ref('DataSource') })] },
  },
  'PUT /v1/data-sources/:ds': {
    tag: 'data-sources',
    summary: 'Update name, type, columns, definition, hooks (public, accessRules: studio token)',
    see: ds,
    body: obj({ name: str, type: nullable(str), columns: arr(str), definition: free, hooks: arr(free), public: bool, accessRules: arr(free) }),
    ok: { 200: ['Updated', obj({ dataSource: ref('DataSource') })] },
  },
  'DELETE /v1/data-sources/:ds': {
    tag: 'data-sources',
    summary: 'Delete the data source, its entries, versions and files',
    ok: { 200: ['Deleted (no body)'] },
  },
  'POST /v1/data-sources/:ds/data': {
    tag: 'data-sources',
    summary: 'Bulk import (replace, or append); [] without append truncates',
    see: ds,
    query: { append: 'true to append' },
    body: obj({ entries: arr(free), append: bool }, ['entries']),
    ok: { 200: ['Imported (no body)'] },
  },
  'GET /v1/data-sources/:ds/data': {
    tag: 'data-sources',
    summary: 'Every entry (same access rules as a select), in the default order',
    see: ds,
    anonymous: true,
    query: { limit: 'most entries (0 or absent: all)', offset: 'entries skipped' },
    ok: { 200: ['Entries', obj({ entries: arr(ref('Entry')) })] },
  },
  'PUT /v1/data-sources/:ds/data': {
    tag: 'data-sources',
    summary: 'Insert an entry (JSON or multipart with files)',
    see: ds,
    body: free,
    multipart: true,
    ok: { 201: ['The entry', ref('Entry')] },
  },
  'POST /v1/data-sources/:ds/data/query': {
    tag: 'data-sources',
    summary: 'Select (with order, pagination, attributes, aggregate, join) or delete',
    see: ds,
    anonymous: true,
    body: ref('Query'),
    ok: { 200: ['Entries, pagination, or deletedCount', obj({ entries: arr(any), pagination: ref('Pagination'), deletedCount: int })] },
  },
  'GET /v1/data-sources/:ds/data/:entryId': { tag: 'data-sources', summary: 'One entry', anonymous: true, ok: { 200: ['The entry', ref('Entry')] } },
  'PUT /v1/data-sources/:ds/data/:entryId': {
    tag: 'data-sources',
    summary: 'Update an entry (shallow merge)',
    body: free,
    ok: { 201: ['The entry', ref('Entry')] },
  },
  'DELETE /v1/data-sources/:ds/data/:entryId': { tag: 'data-sources', summary: 'Delete an entry', ok: { 200: ['Deleted', empty] } },
  'GET /v1/data-sources/:ds/indexes/:indexes': {
    tag: 'data-sources',
    summary: 'Distinct values of comma-separated columns (dots for nested)',
    anonymous: true,
    ok: { 200: ['Indexes', obj({ indexes: { type: 'object', additionalProperties: arr(any) } })] },
  },
  'POST /v1/data-sources/:ds/commit': {
    tag: 'data-sources',
    summary: 'Inserts, updates and deletes in one transaction; converges with a stale list (gone ids: delete no-op, update reported in errors)',
    see: ds,
    headers: {
      'Idempotency-Key':
        'a commit re-sent with the same key (same token, data source and body) applies once; answered again with header Idempotent-Replayed: true',
    },
    body: ref('Commit'),
    ok: {
      200: [
        'The whole data set (unless returnEntries is false), clientIds, and the updates not applied',
        obj({
          entries: arr(ref('Entry')),
          clientIds: free,
          errors: arr(obj({ index: int, id: int, clientId: { type: ['string', 'integer'] }, code: { enum: ['ENTRY_NOT_FOUND'] }, message: str })),
        }),
      ],
    },
  },
  'GET /v1/data-sources/:ds/versions': {
    tag: 'data-sources',
    summary: 'Snapshots, newest first',
    ok: { 200: ['Versions', obj({ versions: arr(ref('Version')) })] },
  },
  'GET /v1/data-sources/:ds/versions/:versionId/data': {
    tag: 'data-sources',
    summary: 'Entries of a snapshot',
    query: { limit: 'most entries' },
    ok: { 200: ['Entries', obj({ entries: arr(ref('Entry')) })] },
  },
  'POST /v1/data-sources/:ds/versions/:versionId/data': {
    tag: 'data-sources',
    summary: 'Entries of a snapshot, with a where filter',
    body: obj({ limit: int, where: free }),
    ok: { 200: ['Entries', obj({ entries: arr(ref('Entry')) })] },
  },
  'POST /v1/data-sources/:ds/versions/:versionId/restore': {
    tag: 'data-sources',
    summary: 'Restore a snapshot (the current data is snapshotted first)',
    ok: { 200: ['Restored', obj({ restored: obj({ versionId: int, count: int }), backup: ref('Version') })] },
  },
  'GET /v1/data-sources/:ds/files/:fileId': {
    tag: 'data-sources',
    summary: 'An uploaded file, decrypted',
    anonymous: true,
    ok: { 200: ['The file (its own content type)'] },
  },
  'GET /v1/data-sources/:ds/logs': {
    tag: 'data-sources',
    summary: 'Newest log records of the data source (studio token)',
    query: { type: 'log type', limit: 'most records' },
    ok: { 200: ['Log records', obj({ logs: arr(ref('LogRecord')) })] },
  },

  // Media library
  'GET /v1/media': {
    tag: 'media',
    summary: "Folders and files of a folder, an app's root or the organization's root (default)",
    see: 'docs/media.md',
    query: { folderId: 'a folder', appId: "an app's root", organizationId: "the organization's root (the token's own)" },
    ok: { 200: ['Folders and files', obj({ folders: arr(ref('MediaFolder')), files: arr(ref('MediaFile')) })] },
  },
  'POST /v1/media/folders': {
    tag: 'media',
    summary: 'Create a folder (in parentId, an app or the organization)',
    see: 'docs/media.md',
    body: obj({ name: str, parentId: int, appId: int, organizationId: int }, ['name']),
    ok: { 201: ['The folder', ref('MediaFolder')] },
  },
  'DELETE /v1/media/folders/:folderId': { tag: 'media', summary: 'Delete a folder with its sub-folders and files', ok: { 200: ['Deleted', empty] } },
  'POST /v1/media/files': {
    tag: 'media',
    summary: 'Upload files (multipart, one part per file; encrypted at rest when the organization asks for it)',
    see: 'docs/media.md',
    query: { folderId: 'a folder', appId: "an app's root", organizationId: "the organization's root" },
    body: free,
    multipart: true,
    ok: { 201: ['The files', obj({ files: arr(ref('MediaFile')) })] },
  },
  'GET /v1/media/files/:fileId/contents': {
    tag: 'media',
    summary: 'The bytes of a media file, decrypted (client tokens too)',
    ok: { 200: ['The file (its own content type)'] },
  },
  'DELETE /v1/media/files/:fileId': { tag: 'media', summary: 'Delete a media file', ok: { 200: ['Deleted', empty] } },

  // Notifications
  'GET /v1/apps/:appId/notifications': {
    tag: 'notifications',
    summary: 'List (query parameters; where/scope/user need POST)',
    see: nt,
    query: {
      limit: '1-1000, default 100',
      offset: 'default 0',
      order: 'id|createdAt|updatedAt|orderAt',
      direction: 'ASC|DESC',
      count: 'true: only { count }',
      includeDeleted: 'boolean',
      recipientId: 'GUID: adds readAt',
      unread: 'only unread (needs recipientId)',
    },
    ok: { 200: ['Notifications, or { count }', obj({ notifications: arr(ref('Notification')), count: int })] },
  },
  'POST /v1/apps/:appId/notifications': {
    tag: 'notifications',
    summary: 'List with a body (where, scope, user)',
    see: nt,
    body: ref('NotificationList'),
    ok: { 200: ['Notifications, or { count }', obj({ notifications: arr(ref('Notification')), count: int })] },
  },
  'PUT /v1/apps/:appId/notifications': {
    tag: 'notifications',
    summary: 'Create a notification',
    see: nt,
    body: ref('NotificationInput'),
    ok: { 201: ['Created', obj({ notification: ref('Notification') })] },
  },
  'POST /v1/apps/:appId/notifications/batch': {
    tag: 'notifications',
    summary: 'Create 1-100 notifications, all or nothing',
    body: obj({ notifications: arr(ref('NotificationInput')) }, ['notifications']),
    ok: { 201: ['Created', obj({ notifications: arr(ref('Notification')) })] },
  },
  'POST /v1/apps/:appId/notifications/mark-as-read': {
    tag: 'notifications',
    summary: 'Record read receipts of a recipient',
    body: obj({ recipientId: { ...str, format: 'uuid' }, entries: arr(int) }, ['recipientId', 'entries']),
    ok: { 200: ['Receipts newly recorded', obj({ marked: int })] },
  },
  'PUT /v1/apps/:appId/notifications/:notificationId': {
    tag: 'notifications',
    summary: 'Update (status moves: docs/notifications.md)',
    see: nt,
    body: ref('NotificationChanges'),
    ok: { 200: ['Updated', obj({ notification: ref('Notification') })] },
  },
  'DELETE /v1/apps/:appId/notifications/:notificationId': { tag: 'notifications', summary: 'Soft delete', ok: { 200: ['Deleted', empty] } },
  'GET /v1/apps/:appId/notifications/:notificationId/deliveries': {
    tag: 'notifications',
    summary: 'Push outbox rows and attempts (studio token)',
    ok: { 200: ['Deliveries', obj({ deliveries: arr(free) })] },
  },
  'POST /v1/apps/:appId/subscriptions': {
    tag: 'notifications',
    summary: 'Register a push subscription (same token: updated)',
    body: obj({ device: str, platform: str, token: str, uuid: { ...str, format: 'uuid' }, user: free }, ['token', 'uuid']),
    ok: { 201: ['Created', obj({ subscription: ref('Subscription') })], 200: ['Known token: updated', obj({ subscription: ref('Subscription') })] },
  },
  'GET /v1/apps/:appId/subscriptions': {
    tag: 'notifications',
    summary: 'Push subscriptions (studio token; API tokens get 403 STUDIO_ONLY)',
    ok: { 200: ['Subscriptions', obj({ subscriptions: arr(ref('Subscription')) })] },
  },
  'GET /v1/apps/:appId/subscriptions/public-key': {
    tag: 'notifications',
    summary: 'The VAPID public key browsers subscribe with',
    ok: { 200: ['Key (null without a Web Push sender)', obj({ publicKey: nullable(str) })] },
  },

  // App actions (tasks), screens, function catalog
  'GET /v1/apps/:appId/tasks': {
    tag: 'actions',
    summary: 'Actions with lastRunAt and nextRunAt; answers a strong ETag',
    see: ac,
    query: {
      environment: 'live|viewer: only runnable actions, as that copy',
      view: 'definitions: without lastRunAt / nextRunAt (its ETag changes only with the definitions)',
    },
    headers: { 'If-None-Match': 'the ETag of a list held: 304 when it is still the list' },
    ok: { 200: ['Actions', obj({ actions: arr(ref('Action')) })], 304: ['Not modified: the list of the If-None-Match ETag is current (no body)'] },
  },
  'POST /v1/apps/:appId/tasks': {
    tag: 'actions',
    summary: 'Create an action (unpublished)',
    see: ac,
    body: ref('ActionInput'),
    ok: { 201: ['Created', obj({ action: ref('Action') })] },
  },
  'GET /v1/apps/:appId/tasks/logs': {
    tag: 'actions',
    summary: 'Run logs (query: id, runId, limit, where as JSON)',
    see: ac,
    query: {
      id: 'action id',
      runId: 'the record of one run: a server run id, or a device run id (dev-…)',
      limit: 'default 50, at most 1000',
      where: 'JSON sift query on the record',
    },
    ok: { 200: ['Logs', obj({ count: int, logs: arr(ref('ActionLog')) })] },
  },
  'POST /v1/apps/:appId/tasks/logs': {
    tag: 'actions',
    summary: 'Run logs with a body { id, runId, limit, where }, or device upload { logs }',
    see: ac,
    body: obj({ id: int, runId: { type: ['integer', 'string'] }, limit: int, where: free, logs: arr(ref('ActionLog')) }),
    ok: {
      200: ['Logs', obj({ count: int, logs: arr(ref('ActionLog')) })],
      201: ['Device records stored (idempotent by deviceKey)', obj({ ids: arr(int), created: int })],
    },
  },
  'GET /v1/apps/:appId/tasks/runs': {
    tag: 'actions',
    summary: 'The run queued with the Idempotency-Key header (a run a device queued offline and sent later)',
    see: ac,
    headers: { 'Idempotency-Key': 'required: the key the run was queued with' },
    ok: { 200: ['Run', obj({ run: ref('Run') })] },
  },
  'GET /v1/apps/:appId/tasks/runs/:runId': {
    tag: 'actions',
    summary: 'One run: status, timings, result or error, trace (a server run id, or a device run id dev-…)',
    see: ac,
    headers: { 'Idempotency-Key': 'the key the run was queued with: required for client tokens (else 404 RUN_NOT_FOUND)' },
    ok: { 200: ['Run', obj({ run: ref('Run') })] },
  },
  'GET /v1/apps/:appId/tasks/functions': {
    tag: 'actions',
    summary: 'Function catalog: built-ins and custom functions',
    query: { include: 'code: add the code of custom functions a device may run (environment client or any)' },
    ok: { 200: ['Functions', obj({ functions: arr(ref('FunctionDescriptor')) })] },
  },
  'POST /v1/apps/:appId/tasks/functions': {
    tag: 'actions',
    summary: 'Store a custom function (sandboxed JavaScript)',
    body: obj({ package: str, name: str, description: str, code: str, environment: { enum: ['server', 'client', 'any'] } }, ['package', 'code']),
    ok: { 201: ['Stored', obj({ function: ref('FunctionDescriptor') })] },
  },
  'GET /v1/apps/:appId/tasks/:idOrName': {
    tag: 'actions',
    summary: 'One action (working copy, or ?environment= copy); answers a strong ETag',
    query: { environment: 'live|viewer', view: 'definitions: without lastRunAt / nextRunAt (its ETag changes only with the definition)' },
    headers: { 'If-None-Match': 'the ETag of a copy held: 304 when it is still the action' },
    ok: { 200: ['Action', obj({ action: ref('Action') })], 304: ['Not modified: the copy of the If-None-Match ETag is current (no body)'] },
  },
  'PUT /v1/apps/:appId/tasks/:idOrName': {
    tag: 'actions',
    summary: 'Update the working copy',
    body: ref('ActionInput'),
    ok: { 200: ['Action', obj({ action: ref('Action') })] },
  },
  'DELETE /v1/apps/:appId/tasks/:idOrName': { tag: 'actions', summary: 'Remove the action', ok: { 200: ['Removed', empty] } },
  'POST /v1/apps/:appId/tasks/:id/publish': {
    tag: 'actions',
    summary: 'Publish (copy working → snapshot) or unpublish',
    body: obj({ publish: bool }, ['publish']),
    ok: { 200: ['Action', obj({ action: ref('Action') })] },
  },
  'POST /v1/apps/:appId/tasks/:idOrName/run': {
    tag: 'actions',
    summary: 'Queue a run (202), or run and wait for the result',
    see: ac,
    headers: { 'Idempotency-Key': 'a retried request with the same key queues no second run' },
    body: obj({ payload: free, wait: bool, environment: { enum: ['live', 'viewer'] } }),
    ok: {
      202: ['Queued', obj({ runId: int, status: str })],
      200: ['Result (wait: true)', obj({ runId: int, status: str, result: any, duration: { type: 'number' }, logId: int })],
    },
  },
  'GET /v1/apps/:appId/tasks/:id/compile': {
    tag: 'actions',
    summary: 'Debug compile page (`?html`): runs the pipeline in the browser with Client.App.Actions.Pipeline.run()',
    see: ac,
    html: true,
    query: {
      html: 'flag',
      payload: 'JSON input',
      environment: 'live|viewer',
      debugInPage:
        '1: open in "debug in page" mode (script nodes and custom functions run unsandboxed as page scripts); studio tokens only, else 403 STUDIO_ONLY',
      token: 'API or studio token (a browser cannot send headers when opening a URL): answered by a 303 to the same URL with a ticket instead',
      ticket: 'what the 303 puts in place of token: opens this page for 60 s',
    },
    ok: { 200: ['HTML page'], 303: ['The same URL with a ticket instead of the token'] },
  },
  'GET /v1/apps/:appId/pages': { tag: 'actions', summary: 'Screens of the app', ok: { 200: ['Screens', obj({ pages: arr(ref('Page')) })] } },
  'POST /v1/apps/:appId/pages': {
    tag: 'actions',
    summary: 'Create a screen (its script is what screen-targeted actions load)',
    body: obj({ name: str, script: str }, ['name']),
    ok: { 201: ['Created', obj({ page: ref('Page') })] },
  },
  'GET /v1/apps/:appId/pages/:pageId': { tag: 'actions', summary: 'One screen', ok: { 200: ['Screen', obj({ page: ref('Page') })] } },
  'PUT /v1/apps/:appId/pages/:pageId': {
    tag: 'actions',
    summary: 'Update the working screen',
    body: obj({ name: str, script: str }),
    ok: { 200: ['Screen', obj({ page: ref('Page') })] },
  },
  'DELETE /v1/apps/:appId/pages/:pageId': { tag: 'actions', summary: 'Remove a screen', ok: { 200: ['Removed', empty] } },
  'POST /v1/apps/:appId/pages/:pageId/publish': {
    tag: 'actions',
    summary: 'Publish or unpublish the screen',
    body: obj({ publish: bool }, ['publish']),
    ok: { 200: ['Screen', obj({ page: ref('Page') })] },
  },

  // Analytics
  'POST /v1/apps/:appId/analytics': {
    tag: 'analytics',
    summary: 'Deliver a batch of analytics events (batchId deduplicated)',
    see: 'docs/analytics.md',
    body: obj({ batchId: str, events: arr(ref('AnalyticsEvent')) }, ['events']),
    ok: { 200: ['Accepted', obj({ accepted: int, duplicate: bool })] },
  },
  'GET /v1/apps/:appId/analytics': {
    tag: 'analytics',
    summary: 'Stored analytics events',
    query: { type: 'pageView|event', limit: 'default 100', offset: 'default 0' },
    ok: { 200: ['Events', obj({ events: arr(free) })] },
  },
};

function operation(key: string, op: Operation): Json {
  const [method, path] = key.split(' ') as [string, string];
  const pathParams = [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const parameters: Json[] = [
    ...pathParams.map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: name === 'ds' || name === 'idOrName' ? { type: ['integer', 'string'] } : name === 'indexes' ? str : int,
      description: name === 'ds' ? 'data source id or URL-encoded name' : undefined,
    })),
    ...Object.entries(op.query ?? {}).map(([name, description]) => ({ name, in: 'query', required: false, schema: str, description })),
    ...Object.entries(op.headers ?? {}).map(([name, description]) => ({ name, in: 'header', required: false, schema: str, description })),
  ];
  const responses: Json = {};
  for (const [status, [description, schema]] of Object.entries(op.ok)) {
    responses[status] = schema
      ? { description, content: json(schema) }
      : op.html && status === '200'
        ? { description, content: { 'text/html': { schema: str } } }
        : { description };
  }
  responses.default = { description: 'Error (400, 401, 403, 404, 409, 413, 422, 429): docs/errors.md', content: json(ref('Error')) };
  const body = op.body
    ? { requestBody: { required: method !== 'get', content: { ...json(op.body), ...(op.multipart ? { 'multipart/form-data': { schema: free } } : {}) } } }
    : {};
  return {
    operationId: `${method.toLowerCase()}${path.replace(/[/:.-]+(\w)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: op.summary,
    tags: [op.tag],
    ...(op.see ? { externalDocs: { description: 'Rules', url: op.see } } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...body,
    responses,
    ...(op.anonymous ? { security: [{}, { authToken: [] }] } : {}),
    // The token kinds the route accepts (docs/security.md, "Token kinds"; enforced by http/token-kinds.ts).
    ...(path.startsWith('/v1/') ? { 'x-token-kinds': acceptedKinds(key) } : {}),
  };
}

/** Hono `:param` paths → OpenAPI `{param}` paths. */
export const toOpenApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

/** The OpenAPI 3.1 document; `serverUrl` is the backend's own address. */
export function openApiDocument(serverUrl?: string): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const [key, op] of Object.entries(ROUTES)) {
    const [method, path] = key.split(' ') as [string, string];
    (paths[toOpenApiPath(path)] ??= {})[method.toLowerCase() as Method] = operation(key, op);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'in-app-runtime reference backend',
      version: '0.1.0',
      description:
        'REST interface of data sources, notifications, app actions and analytics. Every `v1` request carries the `Auth-token` header; ' +
        'errors are `{ error: { code, message }, message }` (docs/errors.md).',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    security: [{ authToken: [] }],
    tags: ['meta', 'apps', 'data-sources', 'media', 'notifications', 'actions', 'analytics'].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { authToken: { type: 'apiKey', in: 'header', name: 'Auth-token' } },
      schemas,
    },
  };
}
