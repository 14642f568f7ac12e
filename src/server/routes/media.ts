import type { Context } from 'hono';
import type { App, AppEnv, ServerContext } from '../context.js';
import { idParam } from '../data-sources/routes/http.js';
import { requireAuth } from '../http/auth.js';
import { readJsonObject } from '../http/body.js';
import { HttpError } from '../http/errors.js';
import { isMultipart, readMultipart } from '../http/multipart.js';
import type { MediaContext, MediaService } from '../media/service.js';

/** The context of a request from the query, completed by the body's (multipart fields or JSON); the same key in both must agree. */
function contextOf(c: Context<AppEnv>, fields: Record<string, unknown> = {}): MediaContext {
  const out: Record<string, unknown> = {};
  for (const key of ['folderId', 'appId', 'organizationId'] as const) {
    const query = c.req.query(key);
    const field = fields[key];
    if (Array.isArray(field)) throw new HttpError(400, 'INVALID_FIELD', `Field "${key}" is given more than once`);
    if (query !== undefined && field !== undefined && String(field) !== query)
      throw new HttpError(400, 'INVALID_PARAMETER', `"${key}" differs between the query (${query}) and the body (${String(field)})`);
    out[key] = query ?? field;
  }
  return out;
}

/**
 * The media library (docs/media.md): `GET v1/media` → `{ folders, files }`, `POST v1/media/folders` → the folder,
 * `POST v1/media/files` (multipart) → `{ files }`, `GET v1/media/files/:fileId/contents` (the bytes), and
 * `DELETE` of a file or a folder. Token kinds: http/token-kinds.ts (client tokens: download only).
 */
export function registerMediaRoutes(app: App, _ctx: ServerContext, media: MediaService): void {
  app.get('/v1/media', async (c) => c.json(await media.list(requireAuth(c), contextOf(c))));

  app.post('/v1/media/folders', async (c) => {
    const auth = requireAuth(c);
    const body = await readJsonObject(c);
    const context = contextOf(c, body);
    return c.json(await media.createFolder(auth, { ...body, ...Object.fromEntries(Object.entries(context).filter(([, v]) => v !== undefined)) }), 201);
  });

  app.delete('/v1/media/folders/:folderId', async (c) => {
    await media.removeFolder(requireAuth(c), idParam(c, 'folderId'));
    return c.json({});
  });

  app.post('/v1/media/files', async (c) => {
    const auth = requireAuth(c);
    if (!isMultipart(c)) throw new HttpError(400, 'INVALID_BODY', 'Upload files as a multipart/form-data body (one part per file)');
    const { fields, files } = await readMultipart(c);
    return c.json({ files: await media.upload(auth, contextOf(c, fields), files) }, 201);
  });

  app.get('/v1/media/files/:fileId/contents', async (c) => {
    const { file, bytes } = await media.read(requireAuth(c), idParam(c, 'fileId'));
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

  app.delete('/v1/media/files/:fileId', async (c) => {
    await media.removeFile(requireAuth(c), idParam(c, 'fileId'));
    return c.json({});
  });
}
