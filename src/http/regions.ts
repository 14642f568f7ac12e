import { ClientError } from './errors.js';

/**
 * Regional base addresses (spec: {base_url}, {base_url_us}, {base_url_ca}): the deployment gives them in
 * `regionUrls`, or one `baseUrl`. There is no default host: a client without either fails each call with a
 * ClientError `NOT_CONFIGURED` before anything is sent.
 */
export type Region = 'eu' | 'us' | 'ca';

export function resolveBaseUrl(options: {
  baseUrl?: string | undefined;
  region?: Region | undefined;
  regionUrls?: Partial<Record<Region, string>> | undefined;
}): string {
  const url = options.baseUrl || options.regionUrls?.[options.region ?? 'eu'];
  if (!url)
    throw new ClientError(
      'NOT_CONFIGURED',
      'No backend URL configured: pass baseUrl (or regionUrls) to createClient() or Client.configure(), or data-base-url',
    );
  return url.replace(/\/+$/, '');
}
