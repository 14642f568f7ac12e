import type { App, ServerContext } from '../../context.js';
import { readJson, readJsonObject } from '../../http/body.js';
import { requireKind } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import { idempotencyKey } from '../../http/idempotency.js';
import { isMultipart, readMultipart } from '../../http/multipart.js';
import { streamedJson } from '../../http/streamed-json.js';
import type { DataSourceService } from '../service.js';
import { parseBooleanFlag, isPlainObject } from '../validate.js';
import { callerOf, dataSourceRef, idParam } from './http.js';

/** Entries: bulk import, insert (JSON or multipart), get, update, delete, indexes, commit, query. */
export function registerEntryRoutes(app: App, ctx: ServerContext, service: DataSourceService): void {
  // Bulk import / truncate.
  app.post('/v1/data-sources/:ds/data', async (c) => {
    const ref = dataSourceRef(c);
    const body = await readJsonObject(c);
    const append = parseBooleanFlag(body.append, 'append') ?? parseBooleanFlag(c.req.query('append'), 'append', true) ?? false;
    await service.import(callerOf(c), ref, body.entries, append);
    return c.body(null, 200);
  });

  // Every entry (integration clients list before they commit), in the default order; `limit` / `offset` page it.
  // The access rules of a select apply (columns a rule hides are left out).
  app.get('/v1/data-sources/:ds/data', async (c) => {
    const ref = dataSourceRef(c);
    const page: Record<string, number> = {};
    for (const name of ['limit', 'offset'] as const) {
      const raw = c.req.query(name);
      if (raw === undefined || raw === '') continue;
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
        throw new HttpError(400, 'INVALID_PARAMETER', `Query parameter "${name}" must be a non-negative integer`);
      page[name] = Number(raw);
    }
    if (page.limit === undefined && page.offset === undefined) {
      // Every entry: streamed when the data set is not in memory (docs/data-sources.md, "Streamed answers").
      const all = await service.listAll(callerOf(c), ref);
      if ('entries' in all) return c.json({ entries: all.entries });
      return streamedJson(c, { head: '{"entries":[', next: all.pages.next, tail: ']}', close: all.pages.close }, ctx.limits.answerStallMs);
    }
    const result = await service.query(callerOf(c), ref, { type: 'select', ...page });
    return c.json({ entries: 'entries' in result ? result.entries : [] });
  });

  app.put('/v1/data-sources/:ds/data', async (c) => {
    const ref = dataSourceRef(c);
    if (isMultipart(c)) {
      const { fields, files } = await readMultipart(c);
      return c.json(await service.insert(callerOf(c), ref, fields, files), 201);
    }
    const body = await readJson(c, { required: true });
    if (!isPlainObject(body)) throw new HttpError(400, 'INVALID_BODY', 'The request body must be a JSON object of column names to values');
    return c.json(await service.insert(callerOf(c), ref, body), 201);
  });

  app.post('/v1/data-sources/:ds/data/query', async (c) => {
    const ref = dataSourceRef(c);
    const body = await readJson(c);
    // A page's client token is public: no bulk delete (one entry at a time, as the rules allow).
    if (isPlainObject(body) && body.type === 'delete') requireKind(c, ['api', 'studio'], 'delete entries by query (delete one entry by id instead)');
    return c.json(await service.query(callerOf(c), ref, body ?? {}));
  });

  app.get('/v1/data-sources/:ds/data/:entryId', async (c) => c.json(await service.getEntry(callerOf(c), dataSourceRef(c), idParam(c, 'entryId'))));

  app.put('/v1/data-sources/:ds/data/:entryId', async (c) => {
    const ref = dataSourceRef(c);
    const id = idParam(c, 'entryId');
    const body = await readJsonObject(c);
    return c.json(await service.updateEntry(callerOf(c), ref, id, body), 201);
  });

  app.delete('/v1/data-sources/:ds/data/:entryId', async (c) => {
    await service.deleteEntry(callerOf(c), dataSourceRef(c), idParam(c, 'entryId'));
    return c.json({});
  });

  app.get('/v1/data-sources/:ds/indexes/:indexes', async (c) => {
    const columns = (c.req.param('indexes') ?? '').split(',').map((s) => s.trim());
    if (columns.some((s) => s === '')) throw new HttpError(400, 'INVALID_PARAMETER', 'Path parameter "indexes" must be a comma-separated list of column names');
    return c.json({ indexes: await service.indexes(callerOf(c), dataSourceRef(c), columns) });
  });

  app.post('/v1/data-sources/:ds/commit', async (c) => {
    const ref = dataSourceRef(c);
    const body = await readJsonObject(c);
    // Without append: true a commit replaces the whole data source (like a truncate): not for a page's token.
    if (parseBooleanFlag(body.append, 'append') !== true) requireKind(c, ['api', 'studio'], 'commit without append: true (it replaces the whole data source)');
    const key = idempotencyKey(c);
    // A data set not in memory is answered in pages as the commit left it (docs/data-sources.md, "Streamed answers").
    const { replayed, entryPages, ...result } = await service.commit(callerOf(c), ref, body, key === undefined ? undefined : { key }, { stream: true });
    if (replayed) c.header('Idempotent-Replayed', 'true');
    if (!entryPages) return c.json(result);
    // `{"entries":[…]` then the rest of the answer, keys in the same order as the unstreamed answer.
    const rest = JSON.stringify(result);
    return streamedJson(
      c,
      { head: '{"entries":[', next: entryPages.next, tail: rest === '{}' ? ']}' : `],${rest.slice(1)}`, close: entryPages.close },
      ctx.limits.answerStallMs,
    );
  });
}
