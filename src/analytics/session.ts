import { randomId } from '../storage/connectivity.js';
import type { PrefStore } from './prefs.js';

/** An analytics session ends after this long without events (design §7). */
export const SESSION_IDLE_MS = 30 * 60_000;

interface SessionState {
  id: string;
  lastEventAt: number;
}

export interface Session {
  /** The session id for an event happening at `now`: a new one after 30 idle minutes. Records the activity. */
  touch(now: number): string;
  /** Starts a new session at once. */
  reset(now: number): string;
  /** The current id without recording activity (undefined before the first event). */
  current(): string | undefined;
}

/** A session kept in `prefs` so that it continues across page loads of the same app. */
export function createSession(prefs: PrefStore, idleMs = SESSION_IDLE_MS): Session {
  const read = (): SessionState | undefined => {
    const saved = prefs.get<SessionState>('session');
    return saved && typeof saved.id === 'string' && typeof saved.lastEventAt === 'number' ? saved : undefined;
  };
  let state = read();
  const save = (next: SessionState) => {
    state = next;
    prefs.set('session', next);
    return next.id;
  };
  return {
    touch(now) {
      state = read() ?? state; // another tab of the same app may have moved it on
      // A clock that went backwards (device time changed) does not end the session.
      if (!state || now - state.lastEventAt >= idleMs) return save({ id: randomId(), lastEventAt: now });
      return save({ id: state.id, lastEventAt: Math.max(now, state.lastEventAt) });
    },
    reset(now) {
      return save({ id: randomId(), lastEventAt: now });
    },
    current: () => state?.id,
  };
}
