import { RheoError } from '../../core/errors';
import { pgInstall, pgUninstall } from '../postgres/plans';
import { sqliteInstall, sqliteUninstall } from '../sqlite/plans';
import type { TypeormMigration, TypeormMigrationClass, TypeormQueryRunner } from './external';
import { checkSchemaName, pgTables, sqliteTables } from './names';

/** Options of {@link rheoMigrations}. */
export interface RheoMigrationsOptions {
  /** PostgreSQL schema of the tables (the backend's `schema`). Default `public`. Ignored on SQLite. */
  schema?: string;
}

function statements(qr: TypeormQueryRunner, schema: string, direction: 'up' | 'down'): string[] {
  const type = qr.connection.options.type;
  if (type === 'postgres') return direction === 'up' ? pgInstall(schema, pgTables(schema)) : pgUninstall(pgTables(schema));
  if (type === 'better-sqlite3') return direction === 'up' ? sqliteInstall(sqliteTables()) : sqliteUninstall(sqliteTables());
  throw new RheoError('invalid_argument', `rheo migrations support postgres and better-sqlite3, not ${String(type)}`);
}

/**
 * The migrations that create (and drop) the library's tables, for hosts that run
 * migrations themselves: add them to the DataSource's `migrations` and build the
 * backend with `install: 'none'`. The DDL is the same `install: 'auto'` runs, so
 * the two paths never disagree.
 *
 * ```ts
 * new DataSource({ type: 'postgres', ..., migrations: [...rheoMigrations({ schema: 'rheo' }), ...mine] })
 * ```
 */
export function rheoMigrations(options: RheoMigrationsOptions = {}): TypeormMigrationClass[] {
  const schema = options.schema === undefined ? 'public' : checkSchemaName('schema', options.schema);
  // TypeORM orders migrations by the 13-digit timestamp that ends the name.
  class RheoCreateTables1764374400000 implements TypeormMigration {
    name = 'RheoCreateTables1764374400000';
    async up(qr: TypeormQueryRunner): Promise<void> {
      for (const sql of statements(qr, schema, 'up')) await qr.query(sql);
    }
    async down(qr: TypeormQueryRunner): Promise<void> {
      for (const sql of statements(qr, schema, 'down')) await qr.query(sql);
    }
  }
  return [RheoCreateTables1764374400000];
}
