export { PostgresBackend, postgresBackend } from './postgres-backend';
export type { PostgresBackendOptions } from './options';
