export { SqliteBackend, sqliteBackend } from './sqlite-backend';
export type { SqliteBackendOptions } from './options';
