import { redactString, redactTraced } from './trace-redact.js';
import { decodeValue, type EncodedValue, omittedValue } from './trace-values.js';
import type { TraceEntry } from '../contract/pipeline.js';

/** A node's input and output as encoded where they were computed (src/pipeline/trace-values.ts). */
export interface EntryValues {
  input?: EncodedValue;
  output?: EncodedValue;
}

export interface TraceRecorder {
  /** Adds an entry; a listed one gets its `values` decoded (while the run's budget for values lasts). */
  add(entry: TraceEntry, values?: EntryValues): void;
  /** Whether an entry added now would be listed (then its input and output are worth computing). */
  listing(important?: boolean): boolean;
  /** Counts `count` more ok/skipped runs of a node that are not listed one by one (summed per path); other outcomes are counted in the closing note. */
  aggregate(path: string, pkg: string, outcome: TraceEntry['outcome'], count: number, durationMs: number): void;
  /** Entries that can still be listed: `ordinary` ok/skipped ones, `important` failures and logs (from the same free slots). */
  room(): { ordinary: number; important: number };
  /** The entries, then one summary entry per node path whose later runs were aggregated, then a closing note when some were left out. */
  entries(): TraceEntry[];
}

/** Node paths summarized at most; the runs of further paths are only counted in the closing note. */
const MAX_SUMMARIES = 50;
/** The run's budget of input/output (and long message) characters, in values of `traceValueBytes`: 256 KB by default. */
export const TRACE_BUDGET_VALUES = 64;
/** Message characters every entry keeps, also past the budget. */
const MESSAGE_KEPT = 200;

/**
 * Keeps the first `max` entries; failures and logs are always kept (up to twice that). Later
 * ok/skipped entries are aggregated per node path (a large loop costs one summary entry per
 * node, not one entry per iteration); what does not fit is counted in a closing note.
 */
export function createTrace(max: number, valueBytes = 4096): TraceRecorder {
  const list: TraceEntry[] = [];
  let budget = valueBytes * TRACE_BUDGET_VALUES;
  // Values traced again and again (an `if` outcome, a `set`'s input as its output) are decoded once.
  const decoded = new WeakMap<EncodedValue, unknown>();
  const value = (given: EncodedValue): unknown => {
    // The guest cuts at `valueBytes` with built-ins user code can patch: the host cuts again.
    const encoded: EncodedValue = given[1].length > valueBytes ? [Math.max(given[0], given[1].length), given[1].slice(0, valueBytes)] : given;
    const kept = encoded[1].length;
    if (kept > budget) {
      budget = 0;
      return omittedValue(encoded[0]);
    }
    budget -= kept;
    let v = decoded.get(given);
    if (v === undefined) {
      // Redacted again here, on the host: the guest's own redaction runs with built-ins user code can patch.
      v = redactTraced(decodeValue(encoded));
      decoded.set(given, v);
    }
    return v;
  };
  const listed = (entry: TraceEntry, values: EntryValues | undefined): TraceEntry => {
    // Messages quote what failed (a URL, a value): credentials in them are redacted like values'.
    const message = entry.message === undefined ? undefined : (entry.message = redactString(entry.message));
    if (message !== undefined && message.length > MESSAGE_KEPT) {
      const cap = Math.max(MESSAGE_KEPT, Math.min(valueBytes, budget + MESSAGE_KEPT));
      if (message.length > cap) entry.message = `${message.slice(0, cap)}… (${message.length} characters)`;
      budget = Math.max(0, budget - (Math.min(message.length, cap) - MESSAGE_KEPT));
    }
    if (values?.input) entry.input = value(values.input);
    if (values?.output) entry.output = value(values.output);
    return entry;
  };
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
    add(entry, values) {
      const important = entry.outcome === 'failed' || entry.outcome === 'log';
      if (list.length < max || (important && list.length < max * 2)) list.push(listed(entry, values));
      else if (entry.outcome === 'ok' || entry.outcome === 'skipped') aggregate(entry.path, entry.package, entry.outcome, 1, entry.durationMs);
      else omitted++;
    },
    aggregate,
    listing: (important = false) => list.length < (important ? max * 2 : max),
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
