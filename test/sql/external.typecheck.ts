// Compile-time only (not a spec: jest never runs it; `npm run typecheck` does): the
// hand-written TypeORM and pg shapes of lib/backends/sql/external.ts must accept
// the real types, so a user's DataSource, EntityManager and migrations still
// type-check, and the driver internals the backends read still exist under the
// names they read.
import * as pg from 'pg';
import * as typeorm from 'typeorm';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import type { PostgresDriver as RealPostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import type { BetterSqlite3Driver as RealSqliteDriver } from 'typeorm/driver/better-sqlite3/BetterSqlite3Driver';
import type {
  PgClient,
  PgDataSourceOptions,
  PgModule,
  PgPool,
  PostgresDriver,
  SqliteDriver,
  TypeormDataSource,
  TypeormEntityManager,
  TypeormEntitySchemaOptions,
  TypeormModule,
  TypeormOwnedDataSourceOptions,
  TypeormQueryRunner,
} from '../../lib/backends/sql/external';
import { rheoEntities, rheoMigrations, typeormBackend } from '../../lib';

declare const dataSource: typeorm.DataSource;
declare const manager: typeorm.EntityManager;
declare const queryRunner: typeorm.QueryRunner;
declare const pgOptions: PostgresDataSourceOptions;
declare const pgClient: pg.Client;
declare const pgPool: pg.Pool;
declare const postgresDriver: RealPostgresDriver;
declare const sqliteDriver: RealSqliteDriver;

// TypeORM: what users hand in, and the constructors the factories load.
export const asDataSource: TypeormDataSource = dataSource;
export const asManager: TypeormEntityManager = manager;
export const asQueryRunner: TypeormQueryRunner = queryRunner;
export const asDataSourceClass: TypeormModule['DataSource'] = typeorm.DataSource;
export const ownedDataSource = (options: TypeormOwnedDataSourceOptions): TypeormDataSource => new typeorm.DataSource(options);
// Not `TypeormModule['EntitySchema']` whole: TypeORM types every column of an EntitySchema as optional, the
// backends' shape says the columns they set are there. Their options must be what the real class takes.
export const entitySchema = (options: TypeormEntitySchemaOptions): typeorm.EntitySchema => new typeorm.EntitySchema(options);
export const viaDataSource = () => typeormBackend({ dataSource, schema: 'rheo', install: 'none' });

// What rheoMigrations / rheoEntities return goes into a real DataSource's options.
export const withTables = () =>
  new typeorm.DataSource({ type: 'postgres', migrations: [...rheoMigrations({ schema: 'rheo' })], entities: rheoEntities() });
export const asMigration = (): typeorm.MigrationInterface => new (rheoMigrations()[0])();
export const asEntitySchemas = (): typeorm.EntitySchema[] => rheoEntities();

// The driver internals read through `dataSource.driver` and `dataSource.options`.
export const asPostgresDriver: PostgresDriver = postgresDriver;
export const asSqliteDriver: SqliteDriver = sqliteDriver;
// TypeORM types them `any`: these keep their names honest.
export const postgresDriverKeys: Array<keyof RealPostgresDriver> = ['postgres', 'master'];
export const sqliteDriverKeys: Array<keyof RealSqliteDriver> = ['databaseConnection'];
export const asPgOptions: PgDataSourceOptions = pgOptions;

// pg: the module TypeORM loaded, its pool and the LISTEN client.
export const asPg: PgModule = pg;
export const asPgPool: PgPool = pgPool;
export const asPgClient: PgClient = pgClient;
