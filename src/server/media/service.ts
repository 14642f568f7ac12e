import type { ServerContext } from '../context.js';
import type { MediaFile as MediaFileView, MediaFolder as MediaFolderView } from '../../contract/media.js';
import { checkFileName, type FileStorage } from '../data-sources/files.js';
import { findOrganization } from '../data-sources/store/admin.js';
import { canAccessApp } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import type { UploadedFile } from '../http/multipart.js';
import { getApp, type TokenRecord } from '../store/identity.js';
import {
  deleteFolders,
  deleteMediaFileRow,
  findFolder,
  findMediaFile,
  folderExists,
  folderLock,
  folderTree,
  insertFolder,
  insertMediaFile,
  listFiles,
  listFolders,
  type MediaFileRecord,
  type MediaFolderRecord,
  type MediaPlace,
} from './store.js';

/**
 * The media library (docs/media.md): folders and files of the token's organization, or of one of its apps.
 * - API and studio tokens list, create folders, upload and delete (an API token: the organization's own media and
 *   its app's; a studio token: all of the organization); client tokens (pages) only download.
 * - What a token may not see does not exist for it: 404, never another tenant's names.
 * - Bytes are stored with the data source file storage (same folder root, same per-organization encryption).
 */

/** Where a request works: a folder, or the root of an app or of the organization (query or body values). */
export interface MediaContext {
  folderId?: unknown;
  appId?: unknown;
  organizationId?: unknown;
}

/** The wire shapes are the client's (src/contract/media.ts): one definition for both sides. */
export type { MediaFile as MediaFileView, MediaFolder as MediaFolderView } from '../../contract/media.js';

const folderNotFound = (id: number) => new HttpError(404, 'MEDIA_FOLDER_NOT_FOUND', `Media folder ${id} not found`);
const fileNotFound = (id: number) => new HttpError(404, 'MEDIA_FILE_NOT_FOUND', `Media file ${id} not found`);

function optionalId(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) throw new HttpError(400, 'INVALID_PARAMETER', `"${name}" must be a positive integer`);
  return n;
}

/** Whether the token may see a media item (any kind, e.g. to download; managing needs API or studio: the route table). */
export const canSeeMedia = (auth: TokenRecord, item: { organizationId: number; appId: number | null }) =>
  auth.organizationId === item.organizationId && (auth.kind === 'studio' || item.appId === null || item.appId === auth.appId);

export function createMediaService(ctx: ServerContext, files: () => FileStorage) {
  const fileView = (file: MediaFileRecord): MediaFileView => ({
    id: file.id,
    name: file.name,
    contentType: file.contentType,
    size: file.size,
    url: `${ctx.publicUrl()}/v1/media/files/${file.id}/contents`,
    isEncrypted: file.encrypted,
    mediaFolderId: file.folderId,
    appId: file.appId,
    organizationId: file.organizationId,
    userId: file.userId,
    createdAt: file.createdAt,
    updatedAt: file.updatedAt,
  });
  const folderView = (folder: MediaFolderRecord): MediaFolderView => ({ ...folder, deletedAt: null });

  const visibleFolder = async (auth: TokenRecord, id: number) => {
    const folder = await findFolder(ctx.db, id);
    if (!folder || !canSeeMedia(auth, folder)) throw folderNotFound(id);
    return folder;
  };

  /** The place a request names, checked against the token; `owner` is the organization/app new items get. */
  async function placeOf(auth: TokenRecord, context: MediaContext): Promise<{ place: MediaPlace; owner: { organizationId: number; appId: number | null } }> {
    const folderId = optionalId(context.folderId, 'folderId');
    const appId = optionalId(context.appId, 'appId');
    const organizationId = optionalId(context.organizationId, 'organizationId');
    // Another tenant's organization or app answers as a missing one (issue 15, no probing).
    if (organizationId !== undefined && organizationId !== auth.organizationId)
      throw new HttpError(404, 'ORGANIZATION_NOT_FOUND', `Organization ${organizationId} not found`);
    if (folderId !== undefined) {
      const folder = await visibleFolder(auth, folderId);
      if (appId !== undefined && appId !== folder.appId) throw folderNotFound(folderId);
      return { place: { folderId }, owner: { organizationId: folder.organizationId, appId: folder.appId } };
    }
    if (appId !== undefined) {
      const app = await getApp(ctx.db, appId);
      if (!app || !canAccessApp(auth, app)) throw new HttpError(404, 'APP_NOT_FOUND', `App ${appId} not found`);
      return { place: { organizationId: app.organizationId, appId }, owner: { organizationId: app.organizationId, appId } };
    }
    return { place: { organizationId: auth.organizationId, appId: null }, owner: { organizationId: auth.organizationId, appId: null } };
  }

  return {
    fileView,

    /** `{ folders, files }` of a folder, or of the root of an app or of the organization (default). */
    async list(auth: TokenRecord, context: MediaContext) {
      const { place } = await placeOf(auth, context);
      const [folders, found] = await Promise.all([listFolders(ctx.db, place), listFiles(ctx.db, place)]);
      return { folders: folders.filter((f) => canSeeMedia(auth, f)).map(folderView), files: found.filter((f) => canSeeMedia(auth, f)).map(fileView) };
    },

    async createFolder(auth: TokenRecord, body: Record<string, unknown>): Promise<MediaFolderView> {
      // `folderId` is taken as another name of `parentId` (the folder the new folder goes in).
      const { name, parentId = body.folderId, folderId: alias, appId, organizationId, ...rest } = body;
      if (alias !== undefined && String(alias) !== String(parentId))
        throw new HttpError(400, 'INVALID_FIELD', `"folderId" (${String(alias)}) and "parentId" (${String(parentId)}) name different folders`);
      const unknown = Object.keys(rest)[0];
      if (unknown !== undefined)
        throw new HttpError(400, 'INVALID_FIELD', `Field "${unknown}" is unknown (a folder takes name, parentId, appId, organizationId)`);
      if (typeof name !== 'string' || name.trim() === '' || name.trim().length > 255 || name.includes('\u0000'))
        throw new HttpError(400, 'INVALID_FIELD', 'Field "name" must be a non-empty string of at most 255 characters, without NUL');
      const { owner } = await placeOf(auth, { folderId: parentId, appId, organizationId });
      const parent = optionalId(parentId, 'parentId') ?? null;
      // The parent is read again, locked, in the insert's transaction: it may have been deleted meanwhile.
      const folder = await ctx.db.transaction(async (tx) => {
        if (parent !== null && !(await folderExists(tx, parent, folderLock(ctx.db.dialect, 'share')))) throw folderNotFound(parent);
        return insertFolder(tx, { ...owner, parentId: parent, name: name.trim(), createdAt: ctx.nowIso() });
      });
      return folderView(folder);
    },

    /** Stores the uploaded files in the place named (encrypted when the organization asks for it). */
    async upload(auth: TokenRecord, context: MediaContext, uploads: readonly UploadedFile[]): Promise<MediaFileView[]> {
      if (uploads.length === 0) throw new HttpError(400, 'INVALID_BODY', 'The multipart body holds no file part');
      for (const file of uploads) {
        checkFileName(file.name, file.field);
        if (file.bytes.byteLength > ctx.limits.fileBytes)
          throw new HttpError(413, 'FILE_TOO_LARGE', `File "${file.name}" is larger than ${ctx.limits.fileBytes} bytes`);
      }
      const { place, owner } = await placeOf(auth, context);
      const folderId = 'folderId' in place ? place.folderId : null;
      const org = await findOrganization(ctx.db, owner.organizationId);
      const encrypt = org?.settings.encryption === true;
      const storage = files();
      // The bytes are written first; if the transaction then fails they are removed again.
      const stored: { path: string; encrypted: boolean; iv: string | null; authTag: string | null; file: UploadedFile }[] = [];
      try {
        for (const file of uploads)
          stored.push({
            ...(await storage.save({ organizationId: owner.organizationId, folder: `media/${owner.organizationId}`, bytes: file.bytes, encrypt })),
            file,
          });
        const now = ctx.nowIso();
        const rows = await ctx.db.transaction(async (tx) => {
          // The folder may have been deleted while the bytes were written.
          if (folderId !== null && !(await folderExists(tx, folderId, folderLock(ctx.db.dialect, 'share')))) throw folderNotFound(folderId);
          const out: MediaFileRecord[] = [];
          for (const s of stored)
            out.push(
              await insertMediaFile(tx, {
                ...owner,
                folderId,
                userId: auth.id,
                name: s.file.name,
                contentType: s.file.type || 'application/octet-stream',
                size: s.file.bytes.byteLength,
                path: s.path,
                encrypted: s.encrypted,
                iv: s.iv,
                authTag: s.authTag,
                createdAt: now,
              }),
            );
          return out;
        });
        return rows.map(fileView);
      } catch (error) {
        await Promise.all(stored.map((s) => storage.remove(s.path).catch(() => undefined)));
        throw error;
      }
    },

    /** The file and its bytes (decrypted), for any token that may see it. */
    async read(auth: TokenRecord, id: number): Promise<{ file: MediaFileRecord; bytes: Buffer }> {
      const file = await findMediaFile(ctx.db, id);
      if (!file || !canSeeMedia(auth, file)) throw fileNotFound(id);
      return { file, bytes: await files().read(file) };
    },

    async removeFile(auth: TokenRecord, id: number): Promise<void> {
      const file = await findMediaFile(ctx.db, id);
      if (!file || !canSeeMedia(auth, file)) throw fileNotFound(id);
      if (!(await deleteMediaFileRow(ctx.db, id))) throw fileNotFound(id);
      await files().remove(file.path);
    },

    /** Removes the folder with its sub-folders and their files. */
    async removeFolder(auth: TokenRecord, id: number): Promise<void> {
      await visibleFolder(auth, id);
      const lock = folderLock(ctx.db.dialect, 'update');
      const paths = await ctx.db.transaction(async (tx) => {
        if (!(await folderExists(tx, id, lock))) throw folderNotFound(id);
        return deleteFolders(tx, await folderTree(tx, id, lock));
      });
      await Promise.all(
        paths.map((path) =>
          files()
            .remove(path)
            .catch(() => undefined),
        ),
      );
    },
  };
}

export type MediaService = ReturnType<typeof createMediaService>;
