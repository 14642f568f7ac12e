import type { Migration } from '../migrate.js';

/**
 * Look-ups that read every tenant's rows for lack of an index (found by an audit of per-request costs that grow
 * with the whole database, 2026-11-28): the live actions of an organization, read for every entry written to an
 * organization-level data source (log triggers); a media folder's sub-folders and files, read to list or delete
 * it (the indexes lead with `organization_id`, which these queries do not name); a data source by name alone (a
 * public data source addressed without a token).
 */
export const tenantScanMigrations: Migration[] = [
  {
    id: '0017_tenant_scans',
    up: [
      'CREATE INDEX actions_organization ON actions (organization_id)',
      'CREATE INDEX media_folders_parent_id ON media_folders (parent_id)',
      'CREATE INDEX media_files_folder_id ON media_files (folder_id)',
      'CREATE INDEX data_sources_name ON data_sources (name)',
    ],
  },
];
