import { Worker } from 'node:worker_threads';

/**
 * An HTTP client on a worker thread (another core), for benches of large answers: a real client is on another
 * machine, and a client on the server's thread (the bench's own `fetch`) takes the server's time to read the
 * answer. `request` sends one request from the thread (node:http, a new connection each time) and reads the whole
 * body there, counting its bytes (not decoding them: the time is the server's, as a client that only receives the
 * bytes sees it); `ms` is the thread's wall time from sending to the last byte received. With `profile`, the
 * thread's CPU profile (`.cpuprofile` JSON) is recorded between `startProfile` and `stopProfile`.
 */
export interface ClientThread {
  request(method: string, url: string, headers: Record<string, string>, body?: string): Promise<{ status: number; bytes: number; ms: number; head: string }>;
  startProfile(): Promise<void>;
  stopProfile(): Promise<string>;
  close(): Promise<void>;
}

const SOURCE = `
const { parentPort } = require('node:worker_threads');
const inspector = require('node:inspector');
const http = require('node:http');
let session;
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
parentPort.on('message', async ({ id, kind, method, url, headers, body }) => {
  try {
    if (kind === 'profile-start') {
      session = new inspector.Session();
      session.connect();
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 200 });
      await post('Profiler.start');
      return parentPort.postMessage({ id });
    }
    if (kind === 'profile-stop') {
      const { profile } = await post('Profiler.stop');
      session.disconnect();
      return parentPort.postMessage({ id, profile: JSON.stringify(profile) });
    }
    const t = performance.now();
    const answer = await new Promise((resolve, reject) => {
      const req = http.request(url, { method, headers, agent: false }, (res) => {
        let bytes = 0;
        let head = '';
        res.on('data', (chunk) => {
          if (bytes < 300) head += chunk.subarray(0, 300 - bytes).toString('latin1');
          bytes += chunk.length;
        });
        res.on('end', () => resolve({ status: res.statusCode, bytes, head }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
    parentPort.postMessage({ id, ...answer, ms: performance.now() - t });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.stack || error) });
  }
});
`;

export function startClientThread(): ClientThread {
  const worker = new Worker(SOURCE, { eval: true });
  let next = 0;
  const waiting = new Map<number, { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  worker.on('message', (m: Record<string, unknown> & { id: number; error?: string }) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) w?.reject(new Error(m.error));
    else w?.resolve(m);
  });
  const call = (message: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++next;
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, ...message });
    });
  return {
    request: async (method, url, headers, body) => (await call({ method, url, headers, body })) as { status: number; bytes: number; ms: number; head: string },
    startProfile: async () => void (await call({ kind: 'profile-start' })),
    stopProfile: async () => (await call({ kind: 'profile-stop' })).profile as string,
    close: async () => void (await worker.terminate()),
  };
}
