/**
 * Script-tag entry: `<script src="client.js" data-app-id="1" data-auth-token="…">` defines `window.Client`.
 * Nothing network-bound happens at load time.
 */
import { readAutoTrackOptions, startAutoTracking } from './analytics/auto-track.js';
import { createClient, type Client } from './client.js';
import type { ClientConfig } from './core/config.js';
import * as errors from './http/errors.js';

function intAttr(el: HTMLElement, name: string): number | undefined {
  const raw = el.getAttribute(name);
  if (raw === null || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) {
    console.warn(`[in-app-runtime] ignoring ${name}="${raw}": not a positive integer`);
    return undefined;
  }
  return n;
}

/** Reads data-* configuration from the script element that loaded this file. */
export function readScriptConfig(el: HTMLScriptElement | null): ClientConfig {
  if (!el) return {};
  const config: ClientConfig = {};
  const baseUrl = el.getAttribute('data-base-url');
  if (baseUrl) config.baseUrl = new URL(baseUrl, document.baseURI).toString();
  const region = el.getAttribute('data-region');
  if (region === 'eu' || region === 'us' || region === 'ca') config.region = region;
  const appId = intAttr(el, 'data-app-id');
  if (appId !== undefined) config.appId = appId;
  const organizationId = intAttr(el, 'data-organization-id');
  if (organizationId !== undefined) config.organizationId = organizationId;
  const pageId = intAttr(el, 'data-page-id');
  if (pageId !== undefined) config.pageId = pageId;
  const token = el.getAttribute('data-auth-token');
  if (token) config.authToken = token;
  const environment = el.getAttribute('data-environment');
  if (environment === 'live' || environment === 'viewer') config.environment = environment;
  // The engine chunk and the wasm: data-assets-url, else the folder client.js was loaded from (a CDN copy too).
  const assetsUrl = el.getAttribute('data-assets-url');
  if (assetsUrl) config.assetsUrl = new URL(assetsUrl, document.baseURI).toString();
  else if (el.src) config.assetsUrl = new URL('.', el.src).toString();
  return config;
}

type GlobalClient = Client & { errors: typeof errors; createClient: typeof createClient };

const script = typeof document !== 'undefined' ? (document.currentScript as HTMLScriptElement | null) : null;
const client = createClient(readScriptConfig(script)) as GlobalClient;
client.errors = errors;
client.createClient = createClient;
(globalThis as unknown as { Client: GlobalClient }).Client = client;
// Automatic page view and form-submit events (data-auto-page-view / data-track-forms="false" turn them off).
if (typeof document !== 'undefined') startAutoTracking(client, readAutoTrackOptions(script));
