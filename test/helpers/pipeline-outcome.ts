import type { RunOutcome, TraceEntry } from '../../src/contract/pipeline.js';

/** A trace entry with its times zeroed: each entry's start and duration depend on the machine. */
export const untimed = (t: TraceEntry) => ({ ...t, durationMs: 0, startMs: 0 });

/** A run's outcome without its times, for comparing two runs of one pipeline (compiled and walked). */
export const withoutTimes = (o: RunOutcome) => ({
  ...o,
  durationMs: 0,
  trace: o.trace.map(untimed),
  ...(o.ok ? {} : { error: { ...o.error, trace: o.error.trace.map(untimed) } }),
});
