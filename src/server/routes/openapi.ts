import type { App, ServerContext } from '../context.js';
import { openApiDocument } from './openapi-document.js';

/** `GET /openapi.json`: the REST routes of this backend as an OpenAPI 3.1 document (no token needed). */
export function registerOpenApiRoutes(app: App, ctx: ServerContext): void {
  app.get('/openapi.json', (c) => {
    c.header('Access-Control-Allow-Origin', '*');
    return c.json(openApiDocument(ctx.publicUrl()));
  });
}
