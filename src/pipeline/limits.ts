import { MAX_NODE_DEPTH } from '../contract/action-limits.js';
import type { PipelineLimits } from '../contract/pipeline.js';

export type ResolvedLimits = Required<PipelineLimits>;

export const DEFAULT_PIPELINE_LIMITS: Readonly<ResolvedLimits> = Object.freeze({
  runTimeoutMs: 120_000,
  payloadChars: 2048,
  resultBytes: 6 * 1024 * 1024,
  maxLoopIterations: 100_000,
  maxDepth: MAX_NODE_DEPTH,
  memoryBytes: 128 * 1024 * 1024,
  maxTraceEntries: 1000,
  traceValueBytes: 4096,
});

/** Fills in defaults; a value that is not a positive number is refused (naming it). */
export function resolveLimits(limits: Partial<PipelineLimits> | undefined): ResolvedLimits {
  const out = { ...DEFAULT_PIPELINE_LIMITS } as ResolvedLimits;
  for (const [key, value] of Object.entries(limits ?? {})) {
    if (value === undefined) continue;
    if (!(key in DEFAULT_PIPELINE_LIMITS)) continue;
    if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value))
      throw new TypeError(`limits.${key} must be a positive number, got ${JSON.stringify(value)}`);
    (out as unknown as Record<string, number>)[key] = value;
  }
  out.memoryBytes = Math.max(out.memoryBytes, 24 * 1024 * 1024);
  return out;
}

/** UTF-8 size of a text, counted only when it could exceed `max` (the guest already refused texts longer than `max` characters). */
export function exceedsBytes(text: string, max: number): boolean {
  if (text.length > max) return true;
  if (text.length * 3 <= max) return false;
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 127) bytes += c > 2047 && (c < 0xd800 || c > 0xdfff) ? 2 : 1;
  }
  return bytes > max;
}
