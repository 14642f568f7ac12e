import { loadEngine } from '../actions/engine.js';
import { closedError, type ClientContext } from '../core/context.js';
import { actionsCache, peekCachedActions } from '../storage/actions-cache.js';
import { entry } from '../core/runtime.js';
import { createDelivery, type Delivery } from './delivery.js';
import { createDispatcher, isDeviceAnalyticsAction, type AnalyticsRunner, type Dispatcher } from './dispatcher.js';
import { checkData, checkKind } from './events.js';
import { autoFields } from './fields.js';
import { prefStore } from './prefs.js';
import { resumeQueuedWork } from './resume.js';
import { deviceRunner } from './runner.js';
import { createSession } from './session.js';
import type { AnalyticsData, AnalyticsEvent, AnalyticsKind, EventData } from './types.js';

export type { AnalyticsData, AnalyticsEvent, AnalyticsEventType, AnalyticsKind, AutoFields, EventData } from './types.js';

/** Client.App.Analytics (design §7, §9). */
export interface AnalyticsApi {
  /**
   * Records an event of `type` (`'event'` or `'pageView'`; anything else is refused with a ClientError
   * `INVALID_ANALYTICS_TYPE`). The automatic fields are added (`_platform`, `_os`, `_analyticsSessionId`,
   * `_pageId`, `_pageTitle`, `_userEmail`) under the caller's own values, the event is queued for delivery
   * and the analytics-triggered actions it matches are queued to run on the device. Synchronous: returns the
   * recorded event, or null when tracking is disabled.
   */
  track(type: AnalyticsKind, data?: AnalyticsData | string): AnalyticsEvent | null;
  /** `track('event', data)`: `data.category` and `data.action` are required strings. */
  event(data: EventData): AnalyticsEvent | null;
  /** `track('pageView', …)`: a label string (recorded as `data.label`), a data object, or nothing. */
  pageView(labelOrData?: string | AnalyticsData): AnalyticsEvent | null;
  readonly Session: {
    /** Starts a new analytics session now; returns its id. */
    reset(): string;
    /** The current session id (undefined before the first event). */
    id(): string | undefined;
  };
  /** Turns tracking back on (remembered on this device for the app). */
  enableTracking(): void;
  /** Stops recording events (and so analytics-triggered runs) on this device for the app, until enabled. */
  disableTracking(): void;
  isTrackingEnabled(): boolean;
  /** Stores the events being gathered and sends every queued batch now. Resolves when done (or stopped offline). */
  flush(): Promise<void>;
  /** Resolves once every analytics-triggered run queued so far has ended. */
  idle(): Promise<void>;
}

export interface AnalyticsOptions {
  /** Runs a matching action on the device (default: the actions module's device run). */
  run?: AnalyticsRunner;
  /** Batching of delivery: wait (ms) and largest batch. */
  delivery?: { delayMs?: number; maxBatch?: number };
}

const EVENT_TYPES = { pageView: 'analytics.pageView', event: 'analytics.event' } as const;

export function createAnalyticsApi(ctx: ClientContext, options: AnalyticsOptions = {}): AnalyticsApi {
  const run = options.run ?? deviceRunner(ctx);
  let delivery: Delivery | undefined;
  const deliveryOf = () => (delivery ??= createDelivery(ctx, options.delivery));

  /** The opt-out and session of the current app (the client's runtime keeps them). */
  const stateOf = () =>
    entry(ctx.runtime.analytics, ctx.appId(), () => {
      const prefs = prefStore(`in-app-runtime:${ctx.appId()}:analytics:`);
      return { prefs, session: createSession(prefs) };
    });

  /** This API's dispatchers (its runner's), per app and environment. */
  const dispatchers = new Map<number, Map<string, Dispatcher>>();
  /** The dispatcher of the current app and environment, fed from the actions cache (loaded once). */
  const dispatcherOf = (): Dispatcher => {
    const environment = ctx.config().environment;
    const perApp = entry(dispatchers, ctx.appId(), () => new Map());
    return entry(perApp, environment, () => {
      const dispatcher = createDispatcher({ run, logger: ctx.logger, environment, assetsUrl: () => ctx.config().assetsUrl });
      const cache = actionsCache(ctx);
      // A page load with a stored list whose analytics actions run here: the engine starts while the list is
      // revalidated (up to limits.actionsRevalidateMs), so the first matching event does not wait for it too.
      if (!options.run)
        void peekCachedActions(ctx)
          .then((list) => {
            if (list.some((a) => isDeviceAnalyticsAction(a, environment) && !a.pageId))
              return loadEngine({ assetsUrl: ctx.config().assetsUrl, logger: ctx.logger });
          })
          .catch(() => undefined);
      cache.subscribe((actions) => dispatcher.setActions(actions));
      cache.get().catch((error) => {
        ctx.logger.warn(`Analytics triggers could not be loaded: ${(error as Error)?.message ?? error}`);
        if (!dispatcher.ready) dispatcher.setActions([]);
      });
      return dispatcher;
    });
  };

  resumeQueuedWork(ctx);

  const enabled = () => stateOf().prefs.get<boolean>('disabled') !== true;

  function track(type: AnalyticsKind, data?: AnalyticsData | string): AnalyticsEvent | null {
    const kind = checkKind(type);
    const given = checkData(kind, data);
    ctx.appId(); // NOT_CONFIGURED before anything is recorded
    if (ctx.runtime.closed) throw closedError();
    if (!enabled()) return null;
    const now = ctx.now();
    const sessionId = stateOf().session.touch(now);
    const event: AnalyticsEvent = {
      type: EVENT_TYPES[kind],
      data: { ...autoFields(ctx, sessionId), ...given },
      createdAt: new Date(now).toISOString(),
    };
    deliveryOf().add(event);
    try {
      dispatcherOf().dispatch(event);
      actionsCache(ctx).refreshIfStale(); // a long-lived screen picks up changed actions
    } catch (error) {
      ctx.logger.warn(`Analytics trigger dispatch failed: ${(error as Error)?.message ?? error}`);
    }
    return event;
  }

  return {
    track,
    event: (data) => track('event', data),
    pageView: (labelOrData) => track('pageView', labelOrData),
    Session: {
      reset: () => stateOf().session.reset(ctx.now()),
      id: () => stateOf().session.current(),
    },
    enableTracking() {
      stateOf().prefs.set('disabled', false);
    },
    disableTracking() {
      stateOf().prefs.set('disabled', true);
    },
    isTrackingEnabled: enabled,
    async flush() {
      await deliveryOf().flush();
    },
    idle: () => dispatcherOf().idle(),
  };
}
