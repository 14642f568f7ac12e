import type { ClientContext } from '../core/context.js';
import type { MediaFile, MediaFolder, MediaPlace } from '../contract/media.js';

/** Client.Media: the organization's media library (API or studio token; a page's client token only downloads URLs). */
export interface MediaApi {
  /** Folders and files of a folder, an app's root, or the organization's root. */
  list(place?: MediaPlace): Promise<{ folders: MediaFolder[]; files: MediaFile[] }>;
  /** Uploads files (a FormData of file parts, or Blobs/Files) into a folder, an app's root or the organization's root. */
  upload(files: FormData | Blob | Blob[], place?: MediaPlace): Promise<MediaFile[]>;
  /** Deletes a file. */
  remove(fileId: number): Promise<void>;
  /** A file's bytes (decrypted), e.g. for `URL.createObjectURL`: files are not public, so an `<img src>` of `url` fails. */
  download(fileId: number): Promise<Blob>;
  readonly Folders: {
    create(folder: { name: string; parentId?: number; appId?: number; organizationId?: number }): Promise<MediaFolder>;
    /** Deletes a folder with its sub-folders and files. */
    remove(folderId: number): Promise<void>;
  };
}

// Kept small (client.js has a 20 KB gzip budget): the backend checks ids and places (400 naming the parameter).
export function createMediaApi({ http }: ClientContext): MediaApi {
  const remove = async (path: string) => void (await http.request('DELETE', `v1/media/${path}`));
  return {
    list: (place = {}) => http.request('GET', 'v1/media', { query: { ...place } }),
    async upload(files, place = {}) {
      let body = files;
      if (!(body instanceof FormData)) {
        body = new FormData();
        for (const file of Array.isArray(files) ? files : [files as Blob]) body.append('files', file, (file as File).name || 'file');
      }
      return (await http.request<{ files: MediaFile[] }>('POST', 'v1/media/files', { query: { ...place }, body })).files;
    },
    remove: (fileId) => remove(`files/${encodeURIComponent(fileId)}`),
    download: (fileId) => http.request('GET', `v1/media/files/${encodeURIComponent(fileId)}/contents`, { blob: true }),
    Folders: {
      create: (folder) => http.request('POST', 'v1/media/folders', { json: folder }),
      remove: (folderId) => remove(`folders/${encodeURIComponent(folderId)}`),
    },
  };
}
