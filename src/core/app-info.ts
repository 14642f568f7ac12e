import type { ClientContext } from './context.js';

export interface AppInfo {
  id: number;
  name: string;
  organizationId: number;
}

/** `GET v1/apps/:appId`: the app the client is configured for, as the backend knows it. */
export async function getAppInfo(ctx: ClientContext, options?: { signal?: AbortSignal }): Promise<AppInfo> {
  const { app } = await ctx.http.request<{ app: AppInfo }>('GET', `v1/apps/${ctx.appId()}`, {
    signal: options?.signal,
  });
  return app;
}
