import { RheoError } from '../../core/errors';

/** Tables the library owns; every one carries the `rheo_` prefix so it never collides with the host's. */
export const TABLES = {
  streams: 'rheo_streams',
  partitions: 'rheo_partitions',
  events: 'rheo_events',
  groups: 'rheo_groups',
  groupPartitions: 'rheo_group_partitions',
  deliveries: 'rheo_deliveries',
} as const;

/** Logical table name -> the identifier to put in SQL (schema-qualified and quoted on PostgreSQL). */
export type TableNames = { -readonly [K in keyof typeof TABLES]: string };

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Validate a PostgreSQL schema name. Only plain identifiers are accepted (letters,
 * digits, underscore; at most 63 bytes, PostgreSQL's limit), and they are still
 * quoted wherever they reach SQL: a schema name is the one identifier we must
 * splice into statement text, since identifiers cannot be bound parameters.
 */
export function checkSchemaName(field: string, schema: unknown): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw RheoError.invalid(field, 'must be a PostgreSQL identifier: a letter or _, then letters, digits or _, at most 63 characters');
  }
  return schema;
}

/** Double-quote an identifier (doubling embedded quotes, the SQL standard escape). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Fully qualified, quoted table identifiers in `schema`. */
export function pgTables(schema: string): TableNames {
  const out = {} as TableNames;
  for (const [k, v] of Object.entries(TABLES)) out[k as keyof TableNames] = `${quoteIdent(schema)}.${quoteIdent(v)}`;
  return out;
}

/** SQLite has no schemas: plain quoted table identifiers. */
export function sqliteTables(): TableNames {
  const out = {} as TableNames;
  for (const [k, v] of Object.entries(TABLES)) out[k as keyof TableNames] = quoteIdent(v);
  return out;
}

/** The LISTEN/NOTIFY channel of one schema: two Rheo installs in one database never wake each other. */
export function notifyChannel(schema: string): string {
  return `rheo_${schema}`;
}
