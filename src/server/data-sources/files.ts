import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import type { ServerContext } from '../context.js';
import type { Queryable } from '../db/database.js';
import { HttpError } from '../http/errors.js';
import { getSetting, setSetting } from '../store/identity.js';
import type { FileRecord } from './types.js';

/**
 * Uploaded files (entry files and the media library): bytes under `<dataDir>/files/<folder>/` (`<dataSourceId>`
 * for entry files, `media/<organizationId>` for media files), or a temporary folder for an in-memory
 * server (removed on close). When the organization enables encryption, a file is stored AES-256-GCM encrypted
 * with a key derived (HKDF) from a server master key and the organization id; the IV and tag are kept in its row.
 */

/** Executables, scripts and archives are refused (422). */
const BLOCKED = new Set(
  (
    'exe com bat cmd msi msp scr pif cpl dll so dylib sys drv vbs vbe js jse mjs cjs ts wsf wsh ws hta ps1 psm1 sh bash zsh csh ksh ' +
    'php phtml py pyc pl rb jar war ear class apk ipa app dmg pkg deb rpm bin run elf com lnk reg msc gadget inf ' +
    'zip rar 7z tar gz tgz bz2 tbz xz txz lz lzma z cab iso img arj ace'
  ).split(' '),
);

export function checkFileName(name: string, field: string): void {
  // PostgreSQL text cannot hold NUL: refused on both databases alike, with the same answer.
  if (name.includes('\u0000')) throw new HttpError(400, 'INVALID_FIELD', `The name of a file of field "${field}" contains a NUL character`);
  const lower = name.toLowerCase();
  // Every extension counts: "report.pdf.exe" and "archive.tar.gz" are both refused.
  const parts = lower.split('.').slice(1);
  const bad = parts.find((p) => BLOCKED.has(p));
  if (bad !== undefined)
    throw new HttpError(
      422,
      'FILE_TYPE_REFUSED',
      `File "${name}" of field "${field}" has a refused extension ".${bad}" (executables, scripts and archives are not accepted)`,
    );
}

/** What reading stored bytes needs: where they are, and how they were encrypted (for which organization). */
export type StoredFile = Pick<FileRecord, 'path' | 'encrypted' | 'iv' | 'authTag' | 'organizationId'>;

export interface FileStorage {
  root: string;
  /** Stores bytes in `folder` (a relative path of safe segments, e.g. the data source id). */
  save(init: {
    organizationId: number;
    folder: string;
    bytes: Uint8Array;
    encrypt: boolean;
  }): Promise<Pick<FileRecord, 'path' | 'encrypted' | 'iv' | 'authTag'>>;
  read(file: StoredFile): Promise<Buffer>;
  remove(path: string): Promise<void>;
  removeDataSource(dataSourceId: number): Promise<void>;
}

async function masterKey(db: Queryable): Promise<Buffer> {
  let value = await getSetting(db, 'files.masterKey');
  if (!value) {
    value = randomBytes(32).toString('base64');
    await setSetting(db, 'files.masterKey', value);
  }
  return Buffer.from(value, 'base64');
}

const orgKey = (master: Buffer, organizationId: number) =>
  Buffer.from(hkdfSync('sha256', master, Buffer.from(`org:${organizationId}`), 'in-app-runtime data source files', 32));

export function createFileStorage(ctx: ServerContext): FileStorage {
  let root: string;
  if (ctx.dataDir) root = join(ctx.dataDir, 'files');
  else {
    root = mkdtempSync(join(tmpdir(), 'in-app-runtime-files-'));
    const temp = root;
    ctx.onClose(() => rmSync(temp, { recursive: true, force: true }));
  }
  let key: Promise<Buffer> | undefined;
  const getKey = () => (key ??= masterKey(ctx.db));
  return {
    root,
    async save({ organizationId, folder, bytes, encrypt }) {
      if (!/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/.test(folder)) throw new TypeError(`Invalid storage folder "${folder}"`);
      const path = join(folder, randomUUID());
      await mkdir(join(root, folder), { recursive: true });
      if (!encrypt) {
        await writeFile(join(root, path), bytes);
        return { path, encrypted: false, iv: null, authTag: null };
      }
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', orgKey(await getKey(), organizationId), iv);
      const encrypted = Buffer.concat([cipher.update(bytes), cipher.final()]);
      await writeFile(join(root, path), encrypted);
      return { path, encrypted: true, iv: iv.toString('base64'), authTag: cipher.getAuthTag().toString('base64') };
    },
    async read(file) {
      const bytes = await readFile(join(root, file.path));
      if (!file.encrypted) return bytes;
      const decipher = createDecipheriv('aes-256-gcm', orgKey(await getKey(), file.organizationId), Buffer.from(file.iv!, 'base64'));
      decipher.setAuthTag(Buffer.from(file.authTag!, 'base64'));
      return Buffer.concat([decipher.update(bytes), decipher.final()]);
    },
    async remove(path) {
      await rm(join(root, path), { force: true });
    },
    async removeDataSource(dataSourceId) {
      await rm(join(root, String(dataSourceId)), { recursive: true, force: true });
    },
  };
}

export const fileExtension = (name: string) => extname(name).toLowerCase();
