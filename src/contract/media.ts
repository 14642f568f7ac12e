/** Public shapes of the media library REST interface (docs/media.md). */

export interface MediaFolder {
  id: number;
  name: string;
  parentId: number | null;
  appId: number | null;
  organizationId: number;
  createdAt: string;
  updatedAt: string;
  deletedAt: null;
}

export interface MediaFile {
  id: number;
  name: string;
  contentType: string;
  /** Bytes. */
  size: number;
  /** Where to GET the bytes (`…/v1/media/files/<id>/contents`, with an Auth-token of the organization); an entry may hold it with `<field>MediaFileId`. */
  url: string;
  isEncrypted: boolean;
  mediaFolderId: number | null;
  appId: number | null;
  organizationId: number;
  userId: number | null;
  createdAt: string;
  updatedAt: string;
}

/** Where to list or upload: a folder, an app's root, or the organization's root (the default). */
export interface MediaPlace {
  folderId?: number;
  appId?: number;
  organizationId?: number;
}
