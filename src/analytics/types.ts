/** The two kinds of analytics events (spec Events table). */
export type AnalyticsKind = 'pageView' | 'event';
export type AnalyticsEventType = 'analytics.pageView' | 'analytics.event';

/** Fields every event gets unless the caller gives them (design §7). */
export interface AutoFields {
  /** `web`, or `native` inside an app's native shell (webview). */
  _platform: 'web' | 'native';
  /** e.g. `iOS`, `Android`, `Windows`, `macOS`, `Linux`, `ChromeOS`, `unknown`. */
  _os: string;
  /** Changes after 30 minutes without events, and after `Session.reset()`. */
  _analyticsSessionId: string;
  _pageId?: number;
  _pageTitle?: string;
  _userEmail?: string;
}

export type AnalyticsData = Partial<AutoFields> & Record<string, unknown>;

/** What `track` records, what triggers match and what an analytics-triggered run sees as `event`. */
export interface AnalyticsEvent {
  type: AnalyticsEventType;
  data: AnalyticsData;
  /** ISO time of the client clock. */
  createdAt: string;
}

/** `event(data)`: an event with a category and an action (e.g. `form` / `submit`), plus any fields. */
export interface EventData extends Record<string, unknown> {
  category: string;
  action: string;
  label?: string;
  value?: number;
}
