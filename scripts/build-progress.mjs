// The build of `npm run build` (rollup.config.mjs, bundles in order, warnings kept quiet as with --silent),
// run through Rollup's API so `npm start` can say what it is doing: a first build takes minutes.
import { join } from 'node:path';

const seconds = (ms) => `${Math.round(ms / 1000)} s`;
const first = (value) => (typeof value === 'string' ? value : Array.isArray(value) ? value[0] : Object.values(value ?? {})[0]);

/** What a bundle makes, for the progress lines: `src/global.ts → dist/client.js`. */
function label(options) {
  const name = options.input && typeof options.input === 'object' && !Array.isArray(options.input) ? Object.keys(options.input)[0] : undefined;
  const entry = (o) => (typeof o.entryFileNames === 'string' ? join(o.dir ?? '', name ? o.entryFileNames.replace('[name]', name) : o.entryFileNames) : o.dir);
  const outputs = (options.output ?? []).map((o) => o.file ?? entry(o));
  return `${first(options.input) ?? '?'} → ${[...new Set(outputs)].join(', ')}`;
}

/**
 * Builds every bundle of `configFile`, printing one line as each starts and ends and, every `heartbeatMs`, that
 * a long one is still going. Rejects with the failing bundle named.
 */
export async function buildWithProgress(configFile, { log = console.log, heartbeatMs = 15_000, prefix = '[start]' } = {}) {
  const { rollup } = await import('rollup');
  const { loadConfigFile } = await import('rollup/loadConfigFile');
  const { options } = await loadConfigFile(configFile, { silent: true });
  const started = Date.now();
  const width = String(options.length).length;
  for (const [index, bundleOptions] of options.entries()) {
    const step = `[${String(index + 1).padStart(width)}/${options.length}]`;
    const what = label(bundleOptions);
    const at = Date.now();
    log(`${prefix} ${step} ${what} …`);
    const timer = setInterval(
      () => log(`${prefix} ${' '.repeat(step.length)} still building (${seconds(Date.now() - at)}; ${seconds(Date.now() - started)} in all)`),
      heartbeatMs,
    );
    try {
      const bundle = await rollup(bundleOptions);
      try {
        await Promise.all(bundleOptions.output.map((output) => bundle.write(output)));
      } finally {
        await bundle.close();
      }
    } catch (error) {
      throw Object.assign(new Error(`${what}: ${error?.message ?? error}`), { cause: error });
    } finally {
      clearInterval(timer);
    }
    log(`${prefix} ${' '.repeat(step.length)} done in ${seconds(Date.now() - at)}`);
  }
  log(`${prefix} dist/ built in ${seconds(Date.now() - started)}`);
}
