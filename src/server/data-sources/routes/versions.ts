import type { Context } from 'hono';
import type { App, ServerContext } from '../../context.js';
import { streamedJson } from '../../http/streamed-json.js';
import { readJsonObject } from '../../http/body.js';
import { HttpError } from '../../http/errors.js';
import type { DataSourceService } from '../service.js';
import { callerOf, dataSourceRef, idParam } from './http.js';

/** Versions (snapshots): list, read (GET with `limit`, POST with `limit` and `where`), restore. */
export function registerVersionRoutes(app: App, ctx: ServerContext, service: DataSourceService): void {
  // A version's entries are streamed in pages (docs/data-sources.md, "Streamed answers"); an old snapshot at once.
  const answer = (c: Context, result: Awaited<ReturnType<DataSourceService['versionEntries']>>) =>
    'entries' in result
      ? c.json({ entries: result.entries })
      : streamedJson(c, { head: '{"entries":[', next: result.pages.next, tail: ']}', close: result.pages.close }, ctx.limits.answerStallMs);

  app.get('/v1/data-sources/:ds/versions', async (c) => c.json({ versions: await service.versions(callerOf(c), dataSourceRef(c)) }));

  app.get('/v1/data-sources/:ds/versions/:versionId/data', async (c) => {
    // The spec takes `where` only with POST: refused here rather than silently ignored.
    if (c.req.query('where') !== undefined)
      throw new HttpError(400, 'UNSUPPORTED_PARAMETER', 'Parameter "where" is only accepted in the body of POST …/versions/:versionId/data', {
        field: 'where',
      });
    return answer(c, await service.versionEntries(callerOf(c), dataSourceRef(c), idParam(c, 'versionId'), { limit: c.req.query('limit') }));
  });

  app.post('/v1/data-sources/:ds/versions/:versionId/data', async (c) => {
    const ref = dataSourceRef(c);
    const versionId = idParam(c, 'versionId');
    const body = await readJsonObject(c, { required: false });
    return answer(c, await service.versionEntries(callerOf(c), ref, versionId, { limit: body.limit, where: body.where }));
  });

  app.post('/v1/data-sources/:ds/versions/:versionId/restore', async (c) =>
    c.json(await service.restore(callerOf(c), dataSourceRef(c), idParam(c, 'versionId'))),
  );
}
