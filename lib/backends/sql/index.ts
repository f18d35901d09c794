export { typeormBackend } from './typeorm-backend';
export type { TypeormBackendOptions } from './typeorm-backend';
export type { InstallMode } from './options';
export { rheoMigrations } from './migrations';
export type { RheoMigrationsOptions } from './migrations';
export { rheoEntities } from './entities';
export type { RheoEntitiesOptions } from './entities';
export type {
  TypeormDataSource,
  TypeormEntityManager,
  TypeormEntitySchema,
  TypeormMigration,
  TypeormMigrationClass,
  TypeormQueryRunner,
} from './external';
