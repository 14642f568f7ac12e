import type { TraceEntry } from './types.js';

export interface TraceRecorder {
  add(entry: TraceEntry): void;
  /** The entries, with a closing note when some were left out. */
  entries(): TraceEntry[];
}

/** Keeps the first `max` entries; failures and logs are always kept (up to twice that), the rest counted. */
export function createTrace(max: number): TraceRecorder {
  const list: TraceEntry[] = [];
  let omitted = 0;
  return {
    add(entry) {
      const important = entry.outcome === 'failed' || entry.outcome === 'log';
      if (list.length < max || (important && list.length < max * 2)) list.push(entry);
      else omitted++;
    },
    entries() {
      if (omitted === 0) return list.slice();
      return [...list, { path: '', package: 'trace', durationMs: 0, outcome: 'log', message: `${omitted} more trace entries were left out` }];
    },
  };
}

export const ms = (value: number) => Math.round(value * 1000) / 1000;
