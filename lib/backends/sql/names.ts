import { RheoError } from '../../core/errors';

/** Tables the library owns; every one carries the `rheo_` prefix so it never collides with the host's. */
export const TABLES = {
  streams: 'rheo_streams',
  partitions: 'rheo_partitions',
  events: 'rheo_events',
  groups: 'rheo_groups',
  groupPartitions: 'rheo_group_partitions',
  deliveries: 'rheo_deliveries',
  deadLetters: 'rheo_dead_letters',
  jobs: 'rheo_jobs',
  keyReleases: 'rheo_key_releases',
  schemaVersion: 'rheo_schema_version',
} as const;

/** Logical table name -> the identifier to put in SQL (schema-qualified and quoted on PostgreSQL). */
export type TableNames = { -readonly [K in keyof typeof TABLES]: string };

/** PostgreSQL's identifier limit (NAMEDATALEN - 1): longer identifiers are truncated, NOTIFY channels refused. */
export const PG_IDENTIFIER_MAX_BYTES = 63;

/** The LISTEN/NOTIFY channel of one schema: two Rheo installs in one database never wake each other. */
export function notifyChannel(schema: string): string {
  return `rheo_${schema}`;
}

/**
 * Every identifier built from the schema name: the schema itself and the NOTIFY
 * channel. Table names are fixed and stand beside the schema (`"schema"."table"`),
 * and the constraint and index names PostgreSQL derives come from the fixed table
 * names, never from the schema (the longest is rheo_group_partitions_pkey, 26
 * bytes). So the channel is what bounds the schema name.
 */
const DERIVED_FROM_SCHEMA: ReadonlyArray<(schema: string) => string> = [(schema) => schema, notifyChannel];

/** Longest schema name whose derived identifiers all fit: 63 - "rheo_".length = 58. */
export const MAX_SCHEMA_NAME_LENGTH = PG_IDENTIFIER_MAX_BYTES - Math.max(...DERIVED_FROM_SCHEMA.map((derive) => derive('').length));

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Validate a PostgreSQL schema name. Only plain identifiers are accepted (letters,
 * digits, underscore), and they are still quoted wherever they reach SQL: a schema
 * name is the one identifier we must splice into statement text, since identifiers
 * cannot be bound parameters. The length is checked against every identifier
 * derived from the name, not just the name: a 60-character schema is a valid
 * identifier, but its NOTIFY channel is not, and every append would fail.
 */
export function checkSchemaName(field: string, schema: unknown): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw RheoError.invalid(field, 'must be a PostgreSQL identifier: a letter or _, then letters, digits or _');
  }
  if (schema.length > MAX_SCHEMA_NAME_LENGTH) {
    throw RheoError.invalid(
      field,
      `must be at most ${MAX_SCHEMA_NAME_LENGTH} characters (it has ${schema.length}): the NOTIFY channel "${notifyChannel('<schema>')}" ` +
        `must fit PostgreSQL's ${PG_IDENTIFIER_MAX_BYTES}-byte identifier limit`,
    );
  }
  return schema;
}

/**
 * The `application_name` of the LISTEN connection when the DataSource has none,
 * cut to the limit (the server would cut it silently; cut here, it is what
 * pg_stat_activity shows).
 */
export function listenerApplicationName(schema: string): string {
  return `rheo_listener_${schema}`.slice(0, PG_IDENTIFIER_MAX_BYTES);
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
