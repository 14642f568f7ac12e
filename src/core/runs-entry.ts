/**
 * The lazy `runs` chunk of client.js (`runs-<hash>.mjs`, see src/core/lazy.ts): run handles (`getRun`), run logs
 * (`getLogs`), the client's offline status (`Client.status`, `onStatusChange`), `Client.close()`, the upload loop of device run
 * logs (src/storage/upload-logs.ts) their cap (drop-run-logs.ts), and screen-targeted device runs (src/actions/screen-run.ts). What it needs of client.js comes
 * in a host (src/actions/runs-host.ts). The npm build bundles it.
 */
export { getRun } from '../actions/run-handles.js';
export { getLogs } from '../actions/read-logs.js';
export { status, watchStatus } from '../storage/status.js';
export { uploadLogs } from '../storage/upload-logs.js';
export { dropOldestRunLogs } from '../storage/drop-run-logs.js';
export { runScreenAction } from '../actions/screen-run.js';
export { closeClient } from './close.js';
// Stateless (its cache lives in the client's runtime): bundled here, out of client.js.
export { customFunctionsCache } from '../functions/custom-cache.js';
