import { loadOptionalPeer } from '../../core/optional-peer';
import { checkKeys, checkObject, keySet } from '../../core/validate';
import type { TypeormColumnOptions, TypeormEntitySchema, TypeormModule } from './external';
import { checkSchemaName, TABLES } from './names';

/** Options of {@link rheoEntities}. */
export interface RheoEntitiesOptions {
  /** PostgreSQL schema of the tables. Default `public`. Leave unset on SQLite. */
  schema?: string;
}

const SCHEMA_ONLY = keySet('a rheoEntities option', ['schema']);

type Columns = Record<string, TypeormColumnOptions>;

const text = (primary = false, nullable = false): TypeormColumnOptions => ({ type: 'text', primary, nullable });
const int = (primary = false): TypeormColumnOptions => ({ type: 'integer', primary });
const big = (primary = false, nullable = false): TypeormColumnOptions => ({ type: 'bigint', primary, nullable });

/**
 * The library's tables as TypeORM entities (EntitySchema, so no decorators), for
 * hosts that want to read them through TypeORM (reports, admin screens). They are
 * marked `synchronize: false`: the tables are created by {@link rheoMigrations} or
 * `install: 'auto'`, and neither `synchronize` nor `migration:generate` will ever
 * alter them. The backend itself never goes through them.
 */
export function rheoEntities(options: RheoEntitiesOptions = {}): TypeormEntitySchema[] {
  checkKeys('', checkObject('options', options), SCHEMA_ONLY);
  const schema = options.schema === undefined ? undefined : checkSchemaName('schema', options.schema);
  const { EntitySchema } = loadOptionalPeer<TypeormModule>('typeorm', 'rheoEntities');
  const entity = (key: keyof typeof TABLES, columns: Columns, uniques: Array<{ name: string; columns: string[] }> = []) =>
    // synchronize: false: the DDL belongs to rheoMigrations / install 'auto' (dialect types, WITHOUT ROWID,
    // keys); TypeORM's synchronize and migration:generate must never rebuild these tables.
    new EntitySchema({ name: TABLES[key], tableName: TABLES[key], schema, columns, uniques, synchronize: false });
  return [
    entity('streams', {
      name: text(true),
      partitions: int(),
      created_at: big(),
      max_age_ms: big(false, true),
      max_events: big(false, true),
      dead_letter_max_age_ms: big(false, true),
    }),
    entity('partitions', {
      stream: text(true),
      partition: int(true),
      hwm: big(),
      trimmed_to: big(),
      ts_max: big(),
      // The sequence of the partition's last delayed event, 0 for none (schema 3).
      delayed_to: big(),
    }),
    entity(
      'events',
      {
        stream: text(true),
        partition: int(true),
        sequence: big(true),
        id: text(),
        ts: big(),
        // PostgreSQL: null when it equals ts (see postgres/schema.ts).
        ts_max: big(false, true),
        // A Bloom filter of the top-level scalar fields (sqlite/bloom.ts); -1 on rows written before schema 2.
        bloom: big(),
        key: text(false, true),
        type: text(false, true),
        metadata: { type: 'text' },
        payload: { type: 'text' },
        // A delayed event's deliverAt (ms), null for any other (schema 3).
        deliver_at: big(false, true),
        // When cancelDelayed cancelled the delayed event in every group (ms), null otherwise (schema 5).
        cancelled_at: big(false, true),
      },
      [{ name: 'rheo_events_stream_id_key', columns: ['stream', 'id'] }],
    ),
    entity('groups', {
      stream: text(true),
      name: text(true),
      max_attempts: int(),
      retry_initial_ms: big(),
      retry_factor: { type: 'double precision' },
      retry_max_ms: big(),
      ordering: text(),
      created_at: big(),
      // A group's pause, null when none (schema 4; docs/adr/046-pausing-a-group.md).
      paused_at: big(false, true),
      paused_until: big(false, true),
      pause_reason: text(false, true),
      paused_by: text(false, true),
      // The group's skips (schema 5): how many, the last one's reason and time (ms).
      skipped: big(),
      skip_reason: text(false, true),
      skipped_at: big(false, true),
    }),
    entity('groupPartitions', {
      stream: text(true),
      group_name: text(true),
      partition: int(true),
      cursor: big(),
      // The claim's gate: paused while it is after now, null when not paused (schema 4).
      paused_to: big(false, true),
    }),
    entity('deliveries', {
      stream: text(true),
      group_name: text(true),
      partition: int(true),
      sequence: big(true),
      state: text(),
      attempt: int(),
      lease_id: text(false, true),
      consumer_id: text(false, true),
      leased_at: big(false, true),
      due_at: big(),
      reason: text(false, true),
      dead_at: big(false, true),
    }),
    entity('deadLetters', {
      stream: text(true),
      group_name: text(true),
      partition: int(true),
      sequence: big(true),
      event_id: text(),
      attempt: int(),
      reason: text(),
      dead_at: big(),
    }),
    entity('jobs', { name: text(true), holder: text(), until_ms: big() }),
    entity('schemaVersion', { version: int(true), name: text(), applied_at: big() }),
  ];
}
