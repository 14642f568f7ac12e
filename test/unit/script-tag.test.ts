// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';
import { readScriptConfig } from '../../src/global.js';

function script(attrs: Record<string, string>): HTMLScriptElement {
  const el = document.createElement('script');
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

describe('script-tag configuration', () => {
  it('reads data-* attributes', () => {
    const config = readScriptConfig(
      script({
        src: 'https://cdn.example/lib/client.js',
        'data-base-url': 'https://api.example',
        'data-app-id': '12',
        'data-page-id': '77',
        'data-auth-token': 'abc',
        'data-environment': 'viewer',
        'data-region': 'ca',
      }),
    );
    expect(config).toEqual({
      baseUrl: 'https://api.example/',
      appId: 12,
      pageId: 77,
      authToken: 'abc',
      environment: 'viewer',
      region: 'ca',
      assetsUrl: 'https://cdn.example/lib/',
    });
  });

  it('ignores malformed values instead of failing the page load', () => {
    const config = readScriptConfig(script({ 'data-app-id': 'abc', 'data-environment': 'prod', 'data-page-id': '-3' }));
    expect(config).toEqual({});
  });

  it('defines the global Client when loaded', async () => {
    await import('../../src/global.js');
    const client = (globalThis as unknown as { Client: { configure: unknown; App: unknown; errors: { isApiError: unknown } } }).Client;
    expect(typeof client.configure).toBe('function');
    expect(typeof client.errors.isApiError).toBe('function');
  });
});
