/** `v1/apps/:appId/pages`: app screens whose JavaScript asset screen-targeted actions run. */
import type { App, ServerContext } from '../context.js';
import { intParam } from '../http/auth.js';
import { readJsonObject } from '../http/body.js';
import { HttpError } from '../http/errors.js';
import { loadApp } from '../routes/apps.js';
import { deletePage, getPage, insertPage, listPages, publishPage, updatePage, type PageRow } from './pages-store.js';

const MAX_SCRIPT = 1024 * 1024;

const toPage = (row: PageRow) => ({ ...row, published: row.publishedScript !== null });

function field(body: Record<string, unknown>, name: 'name' | 'script', required: boolean): string | undefined {
  const value = body[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || (name === 'name' && value.trim() === ''))
    throw new HttpError(400, 'INVALID_FIELD', `Field "${name}" must be a ${name === 'name' ? 'non-empty ' : ''}string`);
  if (name === 'script' && value.length > MAX_SCRIPT) throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `Field "script" is longer than ${MAX_SCRIPT} characters`);
  return name === 'name' ? value.trim() : value;
}

export function registerPageRoutes(app: App, ctx: ServerContext): void {
  const base = '/v1/apps/:appId/pages';
  const load = async (appId: number, id: number) => {
    const page = await getPage(ctx.db, appId, id);
    if (!page) throw new HttpError(404, 'PAGE_NOT_FOUND', `No screen ${id} in app ${appId}`);
    return page;
  };

  app.get(base, async (c) => {
    const record = await loadApp(ctx, c);
    return c.json({ pages: (await listPages(ctx.db, record.id)).map(toPage) });
  });
  app.post(base, async (c) => {
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c);
    const id = await insertPage(ctx.db, { appId: record.id, name: field(body, 'name', true)!, script: field(body, 'script', false) ?? '', now: ctx.nowIso() });
    return c.json({ page: toPage(await load(record.id, id)) }, 201);
  });
  app.get(`${base}/:pageId`, async (c) => {
    const record = await loadApp(ctx, c);
    return c.json({ page: toPage(await load(record.id, intParam(c, 'pageId'))) });
  });
  app.put(`${base}/:pageId`, async (c) => {
    const record = await loadApp(ctx, c);
    const page = await load(record.id, intParam(c, 'pageId'));
    const body = await readJsonObject(c);
    await updatePage(ctx.db, page.id, {
      name: field(body, 'name', false) ?? page.name,
      script: field(body, 'script', false) ?? page.script,
      now: ctx.nowIso(),
    });
    return c.json({ page: toPage(await load(record.id, page.id)) });
  });
  app.post(`${base}/:pageId/publish`, async (c) => {
    const record = await loadApp(ctx, c);
    const page = await load(record.id, intParam(c, 'pageId'));
    const body = await readJsonObject(c);
    if (typeof body.publish !== 'boolean') throw new HttpError(400, 'INVALID_FIELD', 'Field "publish" must be a boolean');
    await publishPage(ctx.db, page.id, body.publish, ctx.nowIso());
    return c.json({ page: toPage(await load(record.id, page.id)) });
  });
  app.delete(`${base}/:pageId`, async (c) => {
    const record = await loadApp(ctx, c);
    const page = await load(record.id, intParam(c, 'pageId'));
    await deletePage(ctx.db, page.id);
    return c.json({});
  });
}
