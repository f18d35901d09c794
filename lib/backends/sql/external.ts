/**
 * The few shapes of TypeORM, pg and better-sqlite3 the SQL backends use, written
 * out by hand (as lib/backends/redis/external.ts does for ioredis) so that no
 * typing of these backends imports a driver. All three are optional peers: a
 * project that compiles with `skipLibCheck: false` and has installed none of them
 * must still compile (test/types/run.sh checks it).
 *
 * One file for the three drivers, not one per dialect: the shapes hang off each
 * other (a TypeORM DataSource's driver holds the pg pool, or the better-sqlite3
 * connection), and one compile-time check (test/sql/external.typecheck.ts)
 * holds them all against the installed packages: a TypeORM 1.1 `DataSource`,
 * `EntityManager` and `QueryRunner` satisfy the TypeORM shapes, its constructors
 * accept the options the backends give them, what `rheoMigrations` /
 * `rheoEntities` return is accepted by a real DataSource's options, and pg's
 * `Client`, `Pool` and module satisfy the pg shapes.
 * better-sqlite3 ships no types: its shape is held by the tests that run it.
 */

// ---------------------------------------------------------------- TypeORM

/** What every TypeORM DataSource's options have: the backends read `type` (the dialect) and, on SQLite, `database`. */
export interface TypeormDataSourceOptions {
  readonly type: string;
  readonly database?: unknown;
}

/** Anything TypeORM runs SQL on: a DataSource, a QueryRunner, an EntityManager. */
export interface TypeormQueryable {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/** A TypeORM `DataSource` (type `postgres` or `better-sqlite3`), as the backends use it. */
export interface TypeormDataSource extends TypeormQueryable {
  readonly options: TypeormDataSourceOptions;
  readonly isInitialized: boolean;
  /** TypeORM's driver; each dialect reads its pool or connection from it ({@link PostgresDriver}, {@link SqliteDriver}). */
  readonly driver: object;
  initialize(): Promise<unknown>;
  destroy(): Promise<void>;
  createQueryRunner(): TypeormQueryRunner;
}

/** A TypeORM `QueryRunner`: one connection, and a transaction on it. */
export interface TypeormQueryRunner extends TypeormQueryable {
  readonly connection: TypeormDataSource;
  readonly isTransactionActive: boolean;
  /** The EntityManager bound to this runner (its transaction): what a transactional consumer's handler gets. */
  readonly manager: TypeormEntityManager;
  connect(): Promise<unknown>;
  startTransaction(): Promise<void>;
  commitTransaction(): Promise<void>;
  rollbackTransaction(): Promise<void>;
  release(): Promise<void>;
}

/** A TypeORM `EntityManager`, as a transactional append (`{ manager }`) is given one. */
export interface TypeormEntityManager extends TypeormQueryable {
  readonly connection: TypeormDataSource;
  readonly queryRunner?: TypeormQueryRunner;
}

/** A TypeORM migration (`MigrationInterface`): what the classes {@link rheoMigrations} returns make. */
export interface TypeormMigration {
  name?: string;
  up(queryRunner: TypeormQueryRunner): Promise<unknown>;
  down(queryRunner: TypeormQueryRunner): Promise<unknown>;
}

/** A migration class, as a DataSource's `migrations` option takes it. */
export type TypeormMigrationClass = new () => TypeormMigration;

/** The column types of the library's tables (TypeORM `ColumnType`s). */
export type TypeormColumnType = 'text' | 'integer' | 'bigint' | 'double precision';

/** A column of an {@link TypeormEntitySchema} (TypeORM `EntitySchemaColumnOptions`). */
export interface TypeormColumnOptions {
  type: TypeormColumnType;
  primary?: boolean;
  nullable?: boolean;
}

/** The options of an {@link TypeormEntitySchema} the library sets (TypeORM `EntitySchemaOptions`). */
export interface TypeormEntitySchemaOptions {
  name: string;
  tableName?: string;
  schema?: string;
  columns: Record<string, TypeormColumnOptions>;
  uniques?: Array<{ name: string; columns: string[] }>;
  synchronize?: boolean;
}

/** A TypeORM `EntitySchema`: what {@link rheoEntities} returns. */
export interface TypeormEntitySchema {
  readonly options: TypeormEntitySchemaOptions;
  /** TypeORM's brand on its classes' instances (how it tells an EntitySchema from an entity class). */
  readonly '@instanceof': symbol;
}

/** The DataSources `postgresBackend` and `sqliteBackend` create (and own). */
export type TypeormOwnedDataSourceOptions =
  | { type: 'postgres'; url: string; poolSize: number; connectTimeoutMS: number; applicationName: string }
  | { type: 'better-sqlite3'; database: string; timeout: number; readonly?: boolean; fileMustExist?: boolean };

/** The parts of the 'typeorm' module loaded at run time. */
export interface TypeormModule {
  DataSource: new (options: TypeormOwnedDataSourceOptions) => TypeormDataSource;
  EntitySchema: new (options: TypeormEntitySchemaOptions) => TypeormEntitySchema;
}

// ---------------------------------------------------------------- pg (through TypeORM's PostgresDriver)

/** What TypeORM's `PostgresDriver` (the `driver` of a postgres DataSource) holds. */
export interface PostgresDriver {
  /** The pg module TypeORM loaded: the LISTEN connection is made with it. */
  readonly postgres: PgModule;
  /** The master's pool; missing before `initialize` and after `destroy`. */
  readonly master?: PgPool;
}

/** Connection settings of a postgres DataSource (TypeORM's `PostgresConnectionCredentialsOptions`). */
export interface PgCredentials {
  url?: string;
  host?: string;
  port?: number;
  username?: string;
  password?: string | (() => string) | (() => Promise<string>);
  database?: string;
  ssl?: boolean | object;
  applicationName?: string;
}

/** A postgres DataSource's options (TypeORM's `PostgresDataSourceOptions`): the ones the LISTEN connection copies. */
export interface PgDataSourceOptions extends PgCredentials {
  readonly type: 'postgres';
  connectTimeoutMS?: number;
  /** pg options TypeORM passes to its pool as they are. */
  extra?: Record<string, unknown>;
  replication?: { master: PgCredentials; slaves?: readonly PgCredentials[] };
}

/** Settings of a pg `Client` (pg's `ClientConfig`): the ones the LISTEN connection sets, and any other as given. */
export interface PgClientConfig {
  connectionString?: string;
  host?: string;
  port?: number;
  user?: string;
  password?: string | (() => string | Promise<string>);
  database?: string;
  ssl?: boolean | object;
  connectionTimeoutMillis?: number;
  application_name?: string;
  keepAlive?: boolean;
  [option: string]: unknown;
}

/** A pg pool (pg's `Pool`): named prepared statements go straight to it. */
export interface PgPool {
  query(statement: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
  /** One of the pool's connections, for a transaction of named prepared statements (pg's `PoolClient`). */
  connect(): Promise<PgPoolClient>;
}

/** A connection lent by a {@link PgPool}. */
export interface PgPoolClient {
  query(statement: string | { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
  release(err?: Error | boolean): void;
}

/** A NOTIFY as a pg `Client` delivers it (pg's `Notification`). */
export interface PgNotification {
  channel: string;
  payload?: string;
}

/** A pg `Client`: the LISTEN connection. */
export interface PgClient {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<unknown>;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  on(event: 'notification', listener: (notification: PgNotification) => void): unknown;
}

/** The pg module, as TypeORM loaded it. */
export interface PgModule {
  Client: new (config: PgClientConfig) => PgClient;
}

// ---------------------------------------------------------------- better-sqlite3 (through TypeORM's BetterSqlite3Driver)

/** What TypeORM's `BetterSqlite3Driver` holds: its one connection. */
export interface SqliteDriver {
  readonly databaseConnection: SqliteDatabase;
}

/**
 * A prepared better-sqlite3 statement. `Row` is what `get` and `all` return: the
 * statement's row type when it is tagged (see sql/statement.ts), else unknown.
 */
export interface SqliteStatement<Row = unknown> {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): Row | undefined;
  all(...params: unknown[]): Row[];
}

/** A better-sqlite3 `Database` connection. */
export interface SqliteDatabase {
  readonly open: boolean;
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  pragma(text: string): unknown;
  transaction<T>(fn: () => T): { immediate(): T };
}
