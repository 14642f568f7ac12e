/**
 * dist/server.mjs, the `in-app-runtime/server` entry: checks that the server's packages (optional peer
 * dependencies, see dependencies.ts) are installed, then loads the server itself (dist/server/*.mjs), so a
 * missing one is an Error naming what to install instead of ERR_MODULE_NOT_FOUND. Its exports are those of
 * ./index.ts, which dist/server.d.ts is built from.
 */
import { checkServerImport } from './dependencies.js';

checkServerImport();
const server = await import('./index.js');

export const { startServer, PushSendError, createRecordingPushSender, getNotificationService } = server;

/** Fails to compile when index.ts gains (or loses) a value export that this entry does not pass on. */
const passedOn: { [K in keyof typeof server]: (typeof server)[K] } = { startServer, PushSendError, createRecordingPushSender, getNotificationService };
void passedOn;
