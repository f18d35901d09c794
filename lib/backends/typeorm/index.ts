export { typeormBackend, postgresBackend, sqliteBackend } from './factories';
export type { TypeormBackendOptions, PostgresBackendOptions, SqliteBackendOptions, InstallMode } from './factories';
export { PostgresBackend } from './pg-backend';
export { SqliteBackend } from './sqlite-backend';
