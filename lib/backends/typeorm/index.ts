export { typeormBackend, postgresBackend, sqliteBackend } from './factories';
export type { TypeormBackendOptions, PostgresBackendOptions, SqliteBackendOptions, InstallMode } from './factories';
export { PostgresBackend } from './pg-backend';
export { SqliteBackend } from './sqlite-backend';
export { rheoMigrations } from './migrations';
export type { RheoMigrationsOptions } from './migrations';
export { rheoEntities } from './entities';
export type { RheoEntitiesOptions } from './entities';
