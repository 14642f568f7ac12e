import type { AnalyticsApi } from './api.js';

/**
 * Automatic tracking of the script-tag entry: a page view when the screen has loaded, and a `form` /
 * `submit` event for every form submitted on the screen (so that an action triggered by
 * `{ type: 'analytics.event', data: { category: 'form', action: 'submit' } }` works without code).
 * Each is on by default and turned off with `data-auto-page-view="false"` / `data-track-forms="false"`.
 */
export interface AutoTrackOptions {
  pageView: boolean;
  forms: boolean;
}

interface TrackingClient {
  readonly config: { appId?: number };
  readonly App: { readonly Analytics: AnalyticsApi };
}

const off = (value: string | null) => value !== null && /^(false|0|off|no)$/i.test(value.trim());

export function readAutoTrackOptions(el: HTMLScriptElement | null): AutoTrackOptions {
  return {
    pageView: !off(el?.getAttribute('data-auto-page-view') ?? null),
    forms: !off(el?.getAttribute('data-track-forms') ?? null),
  };
}

/** What a form submission records: no field values, only what names the form. */
export function formSubmitData(form: HTMLFormElement): { category: 'form'; action: 'submit'; [key: string]: unknown } {
  const data: { category: 'form'; action: 'submit'; [key: string]: unknown } = { category: 'form', action: 'submit' };
  const name = form.getAttribute('name');
  const label = form.getAttribute('data-analytics-label') ?? name ?? (form.id || null);
  if (label) data.label = label;
  if (form.id) data.formId = form.id;
  if (name) data.formName = name;
  return data;
}

/** Starts automatic tracking on `doc`. Failures are logged, never thrown into the page. */
export function startAutoTracking(client: TrackingClient, options: AutoTrackOptions, doc: Document = document): void {
  const warn = (what: string, error: unknown) => console.warn(`[in-app-runtime] automatic ${what} not recorded: ${(error as Error)?.message ?? error}`);
  if (options.pageView) {
    // After the page's own scripts (which may call Client.configure()) have run.
    const view = () =>
      setTimeout(() => {
        if (client.config.appId === undefined) return;
        try {
          client.App.Analytics.pageView();
        } catch (error) {
          warn('page view', error);
        }
      }, 0);
    if (doc.readyState === 'loading') doc.addEventListener('DOMContentLoaded', view, { once: true });
    else view();
  }
  if (options.forms) {
    doc.addEventListener(
      'submit',
      (e) => {
        const form = e.target as HTMLFormElement | null;
        if (!form || form.tagName !== 'FORM' || client.config.appId === undefined) return;
        try {
          client.App.Analytics.event(formSubmitData(form));
        } catch (error) {
          warn('form submit event', error);
        }
      },
      true,
    );
  }
}
