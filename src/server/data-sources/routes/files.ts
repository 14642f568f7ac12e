import type { App, ServerContext } from '../../context.js';
import type { DataSourceService } from '../service.js';
import { callerOf, dataSourceRef, idParam } from './http.js';

/** Downloads an uploaded file (decrypted when stored encrypted). Same read rules as the entries. */
export function registerFileRoutes(app: App, _ctx: ServerContext, service: DataSourceService): void {
  app.get('/v1/data-sources/:ds/files/:fileId', async (c) => {
    const { file, bytes } = await service.file(callerOf(c), dataSourceRef(c), idParam(c, 'fileId'));
    return c.body(new Uint8Array(bytes), 200, {
      'Content-Type': file.contentType,
      'Content-Length': String(bytes.byteLength),
      'Content-Disposition': `inline; filename*=UTF-8''${encodeURIComponent(file.name)}`,
      // Uploaded content never runs as a page of this origin.
      'Content-Security-Policy': 'sandbox',
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'private, no-cache',
    });
  });
}
