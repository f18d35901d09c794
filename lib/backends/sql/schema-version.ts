import type { TableNames } from './names';

/**
 * One numbered version of a dialect's schema: the DDL that takes a database from
 * `version - 1` to `version` (version 1 creates everything). A released version is
 * never edited: a change is a new version, so every database, however old, has one
 * path forward (graphile-worker's numbered migrations).
 */
export interface SchemaVersion {
  version: number;
  /** Short, stable description, recorded with the version (e.g. `dead-letters-table`). */
  name: string;
  /** Statements to run in order, in one transaction, under the install lock. Idempotent where the dialect allows. */
  up(t: TableNames, schema: string): string[];
  /**
   * Statements that take the database back to `version - 1` (a TypeORM migration's
   * `down`). Version 1 without one drops every table.
   */
  down?(t: TableNames, schema: string): string[];
}
