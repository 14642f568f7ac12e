// One backend instance of test/bench/postgres-instances.bench.ts, in a process of its own (its RSS is its own):
// the built server (dist/server.mjs, `npm run bench` builds it), options as JSON in argv[2], driven over IPC.
import { startServer } from '../../dist/server.mjs';

const server = await startServer(JSON.parse(process.argv[2]));
let peak = process.memoryUsage().rss;
setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
process.on('message', async (message) => {
  if (message === 'rss') process.send({ rss: process.memoryUsage().rss, peak });
  else if (message === 'reset') {
    peak = process.memoryUsage().rss;
    process.send({ rss: peak, peak });
  } else if (message === 'close') {
    await server.close();
    process.exit(0);
  }
});
// The bench process ended (or was stopped): this instance ends with it.
process.on('disconnect', () => process.exit(0));
process.send({ url: server.url });
