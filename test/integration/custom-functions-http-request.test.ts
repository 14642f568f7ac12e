// The `http-request` built-in in server runs: the outbound service honours the response cap and the
// cancellation signal (node timeout, run timeout), and its failures carry their own codes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../helpers/server.js';
import { rejection } from '../helpers/wait.js';

/** A local HTTP service; `closed` records the paths whose connection the caller closed before the answer ended. */
let target: Server;
let targetUrl: string;
const closed: string[] = [];
const waitClosed = async (path: string) => {
  const end = Date.now() + 5000;
  while (!closed.includes(path)) {
    if (Date.now() > end) throw new Error(`the request to ${path} was not cancelled`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

function handle(req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url!, 'http://x').pathname;
  res.on('close', () => {
    if (!res.writableFinished) closed.push(path);
  });
  switch (path) {
    case '/small':
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ok: true, size: 'small' }));
      return;
    case '/declared-big':
      res.setHeader('content-length', '5000');
      res.end('x'.repeat(5000));
      return;
    case '/endless': {
      // Chunked, no length: keeps writing until the reader goes away.
      res.setHeader('content-type', 'text/plain');
      const timer = setInterval(() => res.write('y'.repeat(256)), 5);
      res.on('close', () => clearInterval(timer));
      return;
    }
    case '/hang':
    case '/hang-run':
    case '/hang-outbound':
      return; // never answers
    default:
      res.statusCode = 404;
      res.end();
  }
}

const httpNode = (path: string, extra: Record<string, unknown> = {}) => ({
  functionPackage: 'com.client.function.http-request',
  settings: { url: `${targetUrl}${path}` },
  ...extra,
});

let b: TestBackend;
const action = async (backend: TestBackend, name: string, functions: unknown[]) => {
  const created = await backend.client.App.Actions.create({ name, functions: functions as never });
  await backend.client.App.Actions.publish(created.id, true);
};

beforeAll(async () => {
  target = createServer(handle);
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  b = await startTestBackend({ limits: { outboundResponseBytes: 1000, outboundTimeoutMs: 400, runTimeoutMs: 10_000 } });
});
afterAll(async () => {
  await b?.close();
  target.closeAllConnections();
  await new Promise((r) => target.close(r));
});

describe('http-request in server runs', () => {
  it('returns the response under the cap', async () => {
    await action(b, 'http-small', [httpNode('/small'), { functionPackage: 'com.client.function.return', settings: { value: '{{ response.body }}' } }]);
    expect(await b.client.App.Actions.runWithResult('http-small')).toEqual({ ok: true, size: 'small' });
  });

  it('a response over the cap fails the run with RESPONSE_TOO_LARGE, declared or streamed, and the download is cancelled', async () => {
    await action(b, 'http-declared', [httpNode('/declared-big')]);
    const declared = await rejection(b.client.App.Actions.runWithResult('http-declared'));
    expect(declared.status).toBe(422);
    expect(declared.code).toBe('RESPONSE_TOO_LARGE');
    expect(declared.message).toContain('larger than 1000 bytes');
    expect(declared.details.errorType).toBe('ResponseTooLargeError');
    expect(declared.details.trace).toEqual([expect.objectContaining({ path: 'functions[0]', package: 'com.client.function.http-request', outcome: 'failed' })]);

    await action(b, 'http-endless', [httpNode('/endless')]);
    const endless = await rejection(b.client.App.Actions.runWithResult('http-endless'));
    expect(endless.code).toBe('RESPONSE_TOO_LARGE');
    await waitClosed('/endless');
    const { logs } = await b.client.App.Actions.getLogs({ limit: 1 });
    expect(logs[0]).toMatchObject({ type: 'app.task.failed', data: { result: { code: 'RESPONSE_TOO_LARGE' } } });
  });

  it('continueOnError records the code in lastError and the run goes on', async () => {
    await action(b, 'http-continue', [
      httpNode('/declared-big', { continueOnError: true }),
      { functionPackage: 'com.client.function.return', settings: { value: '{{ lastError.code }}' } },
    ]);
    expect(await b.client.App.Actions.runWithResult('http-continue')).toBe('RESPONSE_TOO_LARGE');
  });

  it("a node's timeout ends the run with TIMEOUT and cancels the request", async () => {
    await action(b, 'http-node-timeout', [httpNode('/hang', { timeout: 150 })]);
    const started = Date.now();
    const error = await rejection(b.client.App.Actions.runWithResult('http-node-timeout'));
    expect(error.code).toBe('TIMEOUT');
    expect(Date.now() - started).toBeLessThan(5000);
    await waitClosed('/hang');
  });

  it('the outbound time limit fails with HTTP_TIMEOUT and cancels the request', async () => {
    await action(b, 'http-outbound-timeout', [httpNode('/hang-outbound')]);
    const error = await rejection(b.client.App.Actions.runWithResult('http-outbound-timeout'));
    expect(error.code).toBe('HTTP_TIMEOUT');
    expect(error.message).toContain('timed out after 400 ms');
    await waitClosed('/hang-outbound');
  });

  it('error messages redact credentials in the URL: the error, the log record and the trace', async () => {
    await action(b, 'http-secret-url', [httpNode('/hang-outbound?api_key=sekrit1&page=2')]);
    const error = (await rejection(b.client.App.Actions.runWithResult('http-secret-url'))) as Error & { code: string; details: { runId: number } };
    expect(error.code).toBe('HTTP_TIMEOUT');
    expect(error.message).toContain('/hang-outbound?api_key=[redacted]&page=2 timed out');
    const run = await b.client.App.Actions.getRun(error.details.runId);
    const log = (await b.client.App.Actions.getLogs({ runId: error.details.runId, trace: true })).logs[0]!;
    expect(JSON.stringify([error.message, run, log])).not.toContain('sekrit1');
    expect(run.trace.find((t) => t.outcome === 'failed')?.message).toContain('api_key=[redacted]');
  });

  it("the run's time limit ends the run with TIMEOUT and cancels the request", async () => {
    const short = await startTestBackend({ limits: { runTimeoutMs: 300 } });
    try {
      await action(short, 'http-run-timeout', [httpNode('/hang-run')]);
      const error = await rejection(short.client.App.Actions.runWithResult('http-run-timeout'));
      expect(error.code).toBe('TIMEOUT');
      await waitClosed('/hang-run');
      const { logs } = await short.client.App.Actions.getLogs({ limit: 1 });
      expect(logs[0]!.data.result).toMatchObject({ errorType: 'TimeoutError', code: 'TIMEOUT' });
    } finally {
      await short.close();
    }
  });
});
