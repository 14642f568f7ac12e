import type { App, ServerContext } from '../context.js';
import { requireStudio } from '../http/auth.js';
import { readJsonObject } from '../http/body.js';
import { HttpError } from '../http/errors.js';
import { BUILTIN_FUNCTIONS, BUILTIN_PREFIX, PACKAGE_PATTERN } from '../../functions/catalog.js';
import { checkFunctionCode } from '../../functions/check-code.js';
import { catalogId, findCustomFunction, insertCustomFunction, listCustomFunctions, type CustomFunctionRecord } from '../store/functions.js';
import { loadApp } from './apps.js';

const path = '/v1/apps/:appId/tasks/functions';
const MAX_CODE_CHARS = 256 * 1024;

const descriptor = (f: CustomFunctionRecord) => ({
  id: catalogId(f),
  name: f.name,
  package: f.package,
  description: f.description,
  environment: f.environment,
});

/** The function catalog: built-ins plus the app's custom functions (studio tokens add them with their code). */
export function registerFunctionRoutes(app: App, ctx: ServerContext): void {
  app.get(path, async (c) => {
    const record = await loadApp(ctx, c);
    const custom = await listCustomFunctions(ctx.db, record.id);
    const include = c.req.query('include');
    if (include !== undefined && include !== 'code') throw new HttpError(400, 'INVALID_PARAMETER', 'Query "include" must be code');
    // `?include=code`: the code of the functions a device may run (client/any), for device runs; server-only code stays here.
    const withCode = (f: CustomFunctionRecord) => (include === 'code' && f.environment !== 'server' ? { ...descriptor(f), code: f.code } : descriptor(f));
    return c.json({ functions: [...BUILTIN_FUNCTIONS, ...custom.map(withCode)] });
  });

  app.post(path, async (c) => {
    requireStudio(c);
    const record = await loadApp(ctx, c);
    const body = await readJsonObject(c);
    const pkg = body.package;
    if (typeof pkg !== 'string' || !PACKAGE_PATTERN.test(pkg))
      throw new HttpError(400, 'INVALID_FIELD', 'Field "package" must look like com.<vendor>.function.<name>');
    if (pkg.startsWith(BUILTIN_PREFIX)) throw new HttpError(422, 'RESERVED_PACKAGE', `Field "package": ${pkg} is reserved for built-in functions`);
    if (typeof body.code !== 'string' || body.code.trim() === '')
      throw new HttpError(400, 'INVALID_FIELD', 'Field "code" must be the JavaScript source of the function');
    if (body.code.length > MAX_CODE_CHARS) throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `Field "code" is longer than ${MAX_CODE_CHARS} characters`);
    if (body.name !== undefined && (typeof body.name !== 'string' || body.name.trim() === ''))
      throw new HttpError(400, 'INVALID_FIELD', 'Field "name" must be a non-empty string');
    if (body.description !== undefined && typeof body.description !== 'string')
      throw new HttpError(400, 'INVALID_FIELD', 'Field "description" must be a string');
    const environment = body.environment ?? 'any';
    if (environment !== 'server' && environment !== 'client' && environment !== 'any')
      throw new HttpError(400, 'INVALID_FIELD', 'Field "environment" must be server, client or any');
    const problem = await checkFunctionCode(body.code);
    if (problem)
      throw new HttpError(400, 'INVALID_FUNCTION_CODE', `Field "code" of ${pkg}: ${problem.message}`, {
        package: pkg,
        line: problem.line,
        column: problem.column,
      });
    if (await findCustomFunction(ctx.db, record.id, pkg)) throw new HttpError(409, 'NAME_TAKEN', `A function with package ${pkg} already exists`);
    const created = await insertCustomFunction(ctx.db, {
      appId: record.id,
      package: pkg,
      name: typeof body.name === 'string' ? body.name.trim() : pkg.split('.').pop()!,
      description: typeof body.description === 'string' ? body.description : '',
      code: body.code,
      environment,
      now: ctx.nowIso(),
    });
    return c.json({ function: descriptor(created) }, 201);
  });
}
