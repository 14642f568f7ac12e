/** Regional base addresses (spec: {base_url}, {base_url_us}, {base_url_ca}). Each can be overridden. */
export type Region = 'eu' | 'us' | 'ca';

export const DEFAULT_REGION_URLS: Readonly<Record<Region, string>> = Object.freeze({
  eu: 'https://api.eu.in-app-runtime.dev',
  us: 'https://api.us.in-app-runtime.dev',
  ca: 'https://api.ca.in-app-runtime.dev',
});

export function resolveBaseUrl(options: {
  baseUrl?: string | undefined;
  region?: Region | undefined;
  regionUrls?: Partial<Record<Region, string>> | undefined;
}): string {
  if (options.baseUrl) return options.baseUrl.replace(/\/+$/, '');
  const region = options.region ?? 'eu';
  const url = options.regionUrls?.[region] ?? DEFAULT_REGION_URLS[region];
  if (!url) throw new TypeError(`Unknown region "${String(region)}": use eu, us or ca`);
  return url.replace(/\/+$/, '');
}
