import type { ClientContext } from '../core/context.js';
import type { AutoFields } from './types.js';

interface NavigatorLike {
  userAgent?: string;
  platform?: string;
  userAgentData?: { platform?: string };
}

/** `native` inside a native app shell (React Native webview, Capacitor, Cordova, Flutter), else `web`. */
export function detectPlatform(global: Record<string, unknown> = globalThis as unknown as Record<string, unknown>): 'web' | 'native' {
  const capacitor = global.Capacitor as { isNativePlatform?: () => boolean } | undefined;
  if (capacitor && typeof capacitor.isNativePlatform === 'function' && capacitor.isNativePlatform()) return 'native';
  if (global.ReactNativeWebView || global.cordova || global.flutter_inappwebview) return 'native';
  return 'web';
}

/** The operating system, from the user agent (browsers) or `process.platform` (Node). */
export function detectOs(nav: NavigatorLike | undefined = (globalThis as { navigator?: NavigatorLike }).navigator): string {
  const hint = nav?.userAgentData?.platform;
  const ua = `${nav?.userAgent ?? ''} ${nav?.platform ?? ''}`;
  if (/iPhone|iPad|iPod/i.test(ua)) return 'iOS';
  if (/Android/i.test(ua)) return 'Android';
  if (hint) return hint === 'macOS' || hint === 'Windows' || hint === 'Linux' || hint === 'Chrome OS' ? hint.replace('Chrome OS', 'ChromeOS') : hint;
  if (/CrOS/i.test(ua)) return 'ChromeOS';
  if (/Windows|Win32|Win64/i.test(ua)) return 'Windows';
  if (/Mac/i.test(ua)) return 'macOS';
  if (/Linux|X11/i.test(ua)) return 'Linux';
  const proc = (globalThis as { process?: { platform?: string } }).process;
  if (proc?.platform)
    return ({ win32: 'Windows', darwin: 'macOS', linux: 'Linux', android: 'Android' } as Record<string, string>)[proc.platform] ?? proc.platform;
  return 'unknown';
}

let platform: { _platform: 'web' | 'native'; _os: string } | undefined;

/** The automatic fields of an event now; the caller's data is laid over them. */
export function autoFields(ctx: ClientContext, sessionId: string): AutoFields {
  platform ??= { _platform: detectPlatform(), _os: detectOs() };
  const config = ctx.config();
  const fields: AutoFields = { ...platform, _analyticsSessionId: sessionId };
  if (config.pageId !== undefined) fields._pageId = config.pageId;
  const title = (globalThis as { document?: { title?: string } }).document?.title;
  if (title) fields._pageTitle = title;
  if (typeof config.user?.email === 'string' && config.user.email) fields._userEmail = config.user.email;
  return fields;
}
