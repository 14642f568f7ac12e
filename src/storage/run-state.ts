/**
 * What this client remembers of the runs it started, for `getRun` (docs/actions.md "Run handles"), in memory:
 * device runs in progress, the Idempotency-Key of each server run (a client token reads a run only with it), and
 * what became of server runs queued offline once sent (their run id) or refused for good (the error). Kept in
 * the client's runtime (`runs`).
 */
export interface RunState {
  /** Device runs in progress: run id → action and start. */
  device: Map<string, { actionId: number; actionName: string; startedAt: string }>;
  /** Server run id → its Idempotency-Key. */
  keys: Map<number, string>;
  /** Idempotency-Key of a run queued offline → its run id once sent, or the backend's refusal. */
  sent: Map<string, number | { code: string; message: string; queuedAt: string }>;
}

/** Sets `key` in a map that keeps its latest 500 entries. */
export function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.set(key, value);
  if (map.size > 500) map.delete(map.keys().next().value as K);
}
