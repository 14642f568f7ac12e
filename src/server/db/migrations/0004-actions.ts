import type { Migration } from '../migrate.js';

/** Tables of app actions, runs, schedules, screens. Ids: `0004_<name>`, then `0004b_<name>` for later changes. */
export const actionMigrations: Migration[] = [];
