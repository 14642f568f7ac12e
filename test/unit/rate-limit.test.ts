/**
 * The device's manual-run limit (`limits.runsPerMinute`, src/actions/rate-limit.ts): a sliding minute counted
 * exactly, per app, under an injected clock, also when the clock is set back and after thousands of runs expire.
 */
import { describe, expect, it } from 'vitest';
import { takeRunSlot } from '../../src/actions/rate-limit.js';
import { resolveConfig } from '../../src/core/config.js';
import type { ClientContext } from '../../src/core/context.js';
import { withOnce } from '../../src/core/logger.js';
import { createRuntime } from '../../src/core/runtime.js';
import { createTransport } from '../../src/http/transport.js';

const T = Date.parse('2026-02-01T08:00:00Z');

/** A client's context at `clock.now` for app `clock.appId`, limit `runsPerMinute`. */
function context(runsPerMinute: number) {
  const clock = { now: T, appId: 1 };
  const resolved = resolveConfig({ baseUrl: 'https://backend.test', appId: 1, limits: { runsPerMinute } });
  const http = createTransport({ baseUrl: () => resolved.baseUrl!, authToken: () => undefined });
  const noop = () => undefined;
  const logger = withOnce({ debug: noop, info: noop, warn: noop, error: noop });
  const ctx: ClientContext = { http, config: () => resolved, appId: () => clock.appId, now: () => clock.now, logger, runtime: createRuntime() };
  return { ctx, clock };
}

/** The refusal of one more run now: its retryAt, or undefined when the run is allowed (and counted). */
function take(ctx: ClientContext): string | undefined {
  try {
    takeRunSlot(ctx);
    return undefined;
  } catch (error) {
    expect((error as { code: string }).code).toBe('RATE_LIMITED');
    return (error as { details: { retryAt: string } }).details.retryAt;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

describe('manual runs per minute on the device', () => {
  it('allows the limit within a minute, then names when the oldest run leaves the window', () => {
    const { ctx, clock } = context(3);
    for (const at of [0, 1000, 2000]) {
      clock.now = T + at;
      expect(take(ctx)).toBeUndefined();
    }
    clock.now = T + 59_999;
    expect(take(ctx)).toBe(iso(T + 60_000));
    clock.now = T + 60_000;
    expect(take(ctx)).toBeUndefined();
    expect(take(ctx)).toBe(iso(T + 61_000));
  });

  it('counts each app on its own', () => {
    const { ctx, clock } = context(1);
    expect(take(ctx)).toBeUndefined();
    expect(take(ctx)).toBe(iso(T + 60_000));
    clock.appId = 2;
    expect(take(ctx)).toBeUndefined();
    expect(take(ctx)).toBe(iso(T + 60_000));
  });

  it('counts a run by its time when the clock was set back meanwhile', () => {
    const { ctx, clock } = context(2);
    expect(take(ctx)).toBeUndefined();
    clock.now = T - 30_000;
    expect(take(ctx)).toBeUndefined();
    expect(take(ctx)).toBe(iso(T + 30_000));
    // The run of T - 30 s has left the window, the one of T has not: one slot is free.
    clock.now = T + 30_001;
    expect(take(ctx)).toBeUndefined();
    expect(take(ctx)).toBe(iso(T + 60_000));
  });

  it('stays exact after thousands of runs leave the window', () => {
    const { ctx, clock } = context(5000);
    for (let i = 0; i < 5000; i++) {
      clock.now = T + i;
      expect(take(ctx)).toBeUndefined();
    }
    expect(take(ctx)).toBe(iso(T + 60_000));
    // The runs of T … T + 2,500 ms have left; 2,499 remain, so 2,501 more fit.
    clock.now = T + 62_500;
    for (let i = 0; i < 2501; i++) expect(take(ctx)).toBeUndefined();
    expect(take(ctx)).toBe(iso(T + 62_501));
    clock.now = T + 200_000;
    for (let i = 0; i < 5000; i++) expect(take(ctx)).toBeUndefined();
    expect(take(ctx)).toBe(iso(T + 260_000));
  });
});
