import type { Context } from 'hono';

/**
 * A JSON answer too large to build as one string: `head`, the pieces `next` gives (text, or UTF-8 bytes written as
 * they are) until undefined, then `tail`.
 */
export interface JsonPieces {
  head: string;
  next(): Promise<string | Uint8Array | undefined>;
  tail: string;
  /** Frees what `next` reads from; called once the answer ends, is aborted, or fails. */
  close(): Promise<void>;
}

/**
 * Answers `pieces` as a 200 `application/json` response written piece by piece, each piece read only when the
 * socket has taken the previous one (backpressure), so at most about one piece is in memory. The status is sent
 * with the first byte: anything that can be refused must be checked before. A failure after it cannot become an
 * error answer: the connection is closed mid-body, which the client sees as a truncated (unparsable) answer.
 * Headers set before (`c.header`) are sent too.
 */
export function streamedJson(c: Context, pieces: JsonPieces, stallMs: number): Response {
  let stage: 'head' | 'body' | 'done' | 'cancelled' = 'head';
  const close = () => pieces.close().catch((error) => console.error('[in-app-runtime server] freeing a streamed answer failed', error));
  // A client that stops taking pages (without closing) would hold what the answer keeps: cut after `stallMs`.
  let stall: ReturnType<typeof setTimeout> | undefined;
  const watch = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    stall = setTimeout(() => {
      stage = 'cancelled';
      controller.error(new Error(`The client took no part of the answer for ${stallMs} ms`));
      void close();
    }, stallMs);
    stall.unref?.();
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        clearTimeout(stall);
        try {
          if (stage === 'head') {
            stage = 'body';
            controller.enqueue(Buffer.from(pieces.head));
            watch(controller);
            return;
          }
          const piece = stage === 'body' ? await pieces.next() : undefined;
          if (stage === 'cancelled') return;
          if (piece !== undefined) {
            controller.enqueue(typeof piece === 'string' ? Buffer.from(piece) : piece);
            watch(controller);
            return;
          }
          stage = 'done';
          controller.enqueue(Buffer.from(pieces.tail));
          controller.close();
          // Freed once the tail is on its way (freeing may take tens of ms the client need not wait for).
          setImmediate(close);
        } catch (error) {
          await close();
          if (stage === 'cancelled') return; // the client went away while the piece was read
          console.error('[in-app-runtime server] a streamed answer failed after its first byte; the connection is closed', error);
          controller.error(error);
        }
      },
      cancel: async () => {
        clearTimeout(stall);
        stage = 'cancelled';
        await close();
      },
    },
    { highWaterMark: 0 },
  );
  return c.body(stream, 200, { 'Content-Type': 'application/json' });
}
