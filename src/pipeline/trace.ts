import type { TraceEntry } from './types.js';

export interface TraceRecorder {
  add(entry: TraceEntry): void;
  /** Counts `count` more ok/skipped runs of a node that are not listed one by one (summed per path); other outcomes are counted in the closing note. */
  aggregate(path: string, pkg: string, outcome: TraceEntry['outcome'], count: number, durationMs: number): void;
  /** Entries that can still be listed: `ordinary` ok/skipped ones, `important` failures and logs (from the same free slots). */
  room(): { ordinary: number; important: number };
  /** The entries, then one summary entry per node path whose later runs were aggregated, then a closing note when some were left out. */
  entries(): TraceEntry[];
}

/** Node paths summarized at most; the runs of further paths are only counted in the closing note. */
const MAX_SUMMARIES = 50;

/**
 * Keeps the first `max` entries; failures and logs are always kept (up to twice that). Later
 * ok/skipped entries are aggregated per node path (a large loop costs one summary entry per
 * node, not one entry per iteration); what does not fit is counted in a closing note.
 */
export function createTrace(max: number): TraceRecorder {
  const list: TraceEntry[] = [];
  const summaries = new Map<string, { path: string; pkg: string; outcome: 'ok' | 'skipped'; count: number; durationMs: number }>();
  let omitted = 0;
  const aggregate = (path: string, pkg: string, outcome: TraceEntry['outcome'], count: number, durationMs: number) => {
    if (count <= 0) return;
    if (outcome !== 'ok' && outcome !== 'skipped') {
      omitted += count;
      return;
    }
    const key = `${outcome} ${path}`;
    const summary = summaries.get(key);
    if (summary) {
      summary.count += count;
      summary.durationMs += durationMs;
    } else if (summaries.size < MAX_SUMMARIES) summaries.set(key, { path, pkg, outcome, count, durationMs });
    else omitted += count;
  };
  return {
    add(entry) {
      const important = entry.outcome === 'failed' || entry.outcome === 'log';
      if (list.length < max || (important && list.length < max * 2)) list.push(entry);
      else if (entry.outcome === 'ok' || entry.outcome === 'skipped') aggregate(entry.path, entry.package, entry.outcome, 1, entry.durationMs);
      else omitted++;
    },
    aggregate,
    room: () => ({ ordinary: Math.max(0, max - list.length), important: Math.max(0, max * 2 - list.length) }),
    entries() {
      const out = list.slice();
      for (const s of summaries.values())
        out.push({
          path: s.path,
          package: s.pkg,
          durationMs: ms(s.durationMs),
          outcome: s.outcome,
          message: `${s.count} more ${s.outcome} runs, not listed one by one`,
        });
      if (omitted > 0) out.push({ path: '', package: 'trace', durationMs: 0, outcome: 'log', message: `${omitted} more trace entries were left out` });
      return out;
    },
  };
}

export const ms = (value: number) => Math.round(value * 1000) / 1000;
