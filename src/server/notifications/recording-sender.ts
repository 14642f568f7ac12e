import { PushSendError, type PushMessage, type PushSender } from './types.js';

/** A PushSender that records what it is asked to send (tests, local development). */
export interface RecordingPushSender extends PushSender {
  /** Messages accepted, in order. */
  readonly sent: PushMessage[];
  /** Every call, including failed ones. */
  readonly calls: { message: PushMessage; ok: boolean }[];
  /** Makes the next `count` sends fail (`permanent` ones are not retried). */
  failNext(count: number, options?: { permanent?: boolean; message?: string }): void;
  /** Holds every send until `release()`; resolves `started` calls count as they arrive. */
  hold(): void;
  release(): void;
  /** Resolves once `count` calls have started (held or not). */
  started(count: number): Promise<void>;
}

export function createRecordingPushSender(options: { publicKey?: string } = {}): RecordingPushSender {
  const sent: PushMessage[] = [];
  const calls: { message: PushMessage; ok: boolean }[] = [];
  let failures: { permanent: boolean; message: string }[] = [];
  let gate: { promise: Promise<void>; open: () => void } | undefined;
  let startedCount = 0;
  const waiters: { count: number; resolve: () => void }[] = [];

  return {
    sent,
    calls,
    failNext(count, opts = {}) {
      for (let i = 0; i < count; i++) failures.push({ permanent: opts.permanent ?? false, message: opts.message ?? 'simulated push failure' });
    },
    hold() {
      if (gate) return;
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      gate = { promise, open };
    },
    release() {
      gate?.open();
      gate = undefined;
    },
    started(count) {
      if (startedCount >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async send(message) {
      startedCount++;
      for (const w of waiters.filter((w) => startedCount >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      if (gate) await gate.promise;
      const failure = failures[0];
      if (failure) {
        failures = failures.slice(1);
        calls.push({ message, ok: false });
        throw new PushSendError(failure.message, failure.permanent);
      }
      calls.push({ message, ok: true });
      sent.push(message);
    },
    async publicKey() {
      return options.publicKey;
    },
  };
}
