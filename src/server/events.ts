/**
 * In-process event bus for log records (e.g. `dataSource.entry.create`).
 * Listeners run after the emitter's work is done and never make it fail.
 */
export interface LogEvent {
  id?: number;
  type: string;
  appId: number | null;
  organizationId: number | null;
  [key: string]: unknown;
}

export type Listener = (event: LogEvent) => void | Promise<void>;

export interface EventBus {
  on(listener: Listener): () => void;
  emit(event: LogEvent): void;
}

export function createEventBus(): EventBus {
  const listeners = new Set<Listener>();
  return {
    on(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit(event) {
      for (const listener of listeners) {
        queueMicrotask(() => {
          Promise.resolve()
            .then(() => listener(event))
            .catch((error) => console.error('[in-app-runtime server] event listener failed', error));
        });
      }
    },
  };
}
