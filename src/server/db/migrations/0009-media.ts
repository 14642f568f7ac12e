import type { Migration } from '../migrate.js';

/**
 * The media library (docs/media.md): folders and files of an organization, or of one of its apps. A folder may sit
 * in another folder (`parent_id`); a file in a folder (`folder_id`) or at the root. A file's bytes are stored like
 * data source entry files (data-sources/files.ts), encrypted when the organization asks for it.
 */
export const mediaMigrations: Migration[] = [
  {
    id: '0009_media',
    up: [
      `CREATE TABLE media_folders (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        organization_id INTEGER NOT NULL REFERENCES organizations(id),
        app_id INTEGER REFERENCES apps(id),
        parent_id INTEGER REFERENCES media_folders(id),
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      `CREATE INDEX media_folders_parent ON media_folders (organization_id, parent_id)`,
      `CREATE TABLE media_files (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        organization_id INTEGER NOT NULL REFERENCES organizations(id),
        app_id INTEGER REFERENCES apps(id),
        folder_id INTEGER REFERENCES media_folders(id),
        user_id INTEGER,
        name TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        path TEXT NOT NULL,
        encrypted INTEGER NOT NULL DEFAULT 0,
        iv TEXT,
        auth_tag TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      `CREATE INDEX media_files_folder ON media_files (organization_id, folder_id)`,
    ],
  },
];
