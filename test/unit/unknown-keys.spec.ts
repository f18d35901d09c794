import { DataSource } from 'typeorm';
import type { Lease } from '../../lib';
import {
  backendFromUrl,
  Consumer,
  ManualClock,
  memoryBackend,
  postgresBackend,
  redisBackend,
  Rheo,
  RheoAdmin,
  RheoError,
  rheoEntities,
  rheoMigrations,
  RheoModule,
  sqliteBackend,
  typeormBackend,
} from '../../lib';
import { BroadcastMember } from '../../lib/runtime/broadcast';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { Trimmer } from '../../lib/runtime/trimmer';
import { resolveDashboardOptions } from '../../lib/nest/dashboard/dashboard-options';
import { RheoInstance } from '../../lib/nest/rheo-instance';
import { leasedRheo, observe } from '../support/refusals';

/**
 * An unknown key in any options object, event or settle request is refused: a
 * RheoError('invalid_argument') naming the field (`options.bogus`, `event.bogus`,
 * `events[2].bogus`) and listing the valid keys, and nothing is written. A typo
 * (`deliverat`, `expectedVersion`) must fail, not be ignored.
 */

let rheo: Rheo;
let lease: Lease;

beforeEach(async () => {
  ({ rheo, lease } = await leasedRheo(2));
});

const snapshot = () => observe(rheo);

function caught(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  return undefined;
}

async function caughtAsync(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** The refusal: invalid_argument, the field named, every valid key listed in the message. */
function expectRefused(err: unknown, field: string, valid: string[]): void {
  expect(err).toBeInstanceOf(RheoError);
  const e = err as RheoError;
  expect({ code: e.code, field: e.field }).toEqual({ code: 'invalid_argument', field });
  expect(e.message).toContain(`${field} is not`);
  const listed = /\(use ([^)]*)\)/.exec(e.message)?.[1].split(', ');
  expect(listed).toEqual(expect.arrayContaining(valid));
}

const EVENT_KEYS = ['id', 'key', 'type', 'payload', 'metadata', 'partition', 'timestamp', 'deliverAt', 'delayMs'];

type FacadeCase = [label: string, call: () => Promise<unknown>, field: string, valid: string[]];

describe('the facade refuses unknown keys and changes nothing', () => {
  const cases: FacadeCase[] = [
    [
      'createStream options',
      () => rheo.createStream('new', { partitions: 1, bogus: 1 } as never),
      'options.bogus',
      ['partitions', 'ifNotExists', 'retention'],
    ],
    ['createStream ifNotExists typo', () => rheo.createStream('new', { ifNotExist: true } as never), 'options.ifNotExist', ['ifNotExists']],
    [
      'createGroup options',
      () => rheo.createGroup('s', 'new', { bogus: 1 } as never),
      'options.bogus',
      ['start', 'maxAttempts', 'retry', 'ordering', 'ifNotExists'],
    ],
    [
      'createGroup retry',
      () => rheo.createGroup('s', 'new', { retry: { initialMs: 1, bogus: 1 } } as never),
      'retry.bogus',
      ['initialMs', 'factor', 'maxMs'],
    ],
    [
      'createGroup start',
      () => rheo.createGroup('s', 'new', { start: { afterSequence: 0, bogus: 1 } } as never),
      'start.bogus',
      ['afterSequence'],
    ],
    ['append event', () => rheo.append('s', { payload: {}, bogus: 1 } as never), 'event.bogus', EVENT_KEYS],
    ['append deliverat', () => rheo.append('s', { payload: {}, deliverat: new Date() } as never), 'event.deliverat', EVENT_KEYS],
    ['append options', () => rheo.append('s', { payload: {} }, { expectedVersion: 3 } as never), 'options.expectedVersion', ['manager']],
    [
      'appendBatch event',
      () => rheo.appendBatch('s', [{ payload: 1 }, { payload: 2 }, { payload: 3, bogus: 1 } as never]),
      'events[2].bogus',
      EVENT_KEYS,
    ],
    ['appendBatch options', () => rheo.appendBatch('s', [{ payload: 1 }], { bogus: 1 } as never), 'options.bogus', ['manager']],
    ['read options', () => rheo.read('s', { limit: 1, bogus: 1 } as never), 'options.bogus', ['partition', 'afterSequence', 'limit']],
    [
      'query',
      () => rheo.query({ stream: 's', bogus: 1 } as never),
      'query.bogus',
      ['stream', 'where', 'from', 'to', 'afterSequence', 'untilSequence', 'order', 'limit', 'cursor'],
    ],
    ['queryPage', () => rheo.queryPage({ stream: 's', fromm: new Date() } as never), 'query.fromm', ['from']],
    [
      'fetch options',
      () => rheo.fetch('s', 'g', { limit: 1, bogus: 1 } as never),
      'options.bogus',
      ['limit', 'leaseMs', 'consumerId', 'partitions'],
    ],
    ['renew options', () => rheo.renew(lease, { bogus: 1 } as never), 'options.bogus', ['leaseMs']],
    ['renewMany options', () => rheo.renewMany([lease], { leasems: 1 } as never), 'options.leasems', ['leaseMs']],
    ['nack options', () => rheo.nack(lease, { delayMs: 1, bogus: 1 } as never), 'options.bogus', ['reason', 'delayMs']],
    ['reject options', () => rheo.reject(lease, { bogus: 1 } as never), 'options.bogus', ['reason']],
    ['settleMany ack', () => rheo.settleMany([{ kind: 'ack', lease, bogus: 1 } as never]), 'settles[0].bogus', ['kind', 'lease']],
    [
      'settleMany nack',
      () => rheo.settleMany([{ kind: 'ack', lease }, { kind: 'nack', lease, delayms: 5 } as never]),
      'settles[1].delayms',
      ['kind', 'lease', 'reason', 'delayMs'],
    ],
    [
      'settleMany reject',
      () => rheo.settleMany([{ kind: 'reject', lease, delayMs: 5 } as never]),
      'settles[0].delayMs',
      ['kind', 'lease', 'reason'],
    ],
    [
      'replay afterSequence',
      () => rheo.replay('s', 'g', { afterSequence: 0, bogus: 1 } as never),
      'options.bogus',
      ['afterSequence', 'partitions'],
    ],
    [
      'replay from',
      () => rheo.replay('s', 'g', { from: new Date(0), partition: [0] } as never),
      'options.partition',
      ['from', 'partitions'],
    ],
    ['replay query options', () => rheo.replay('s', 'g', { query: {}, partitions: [0] } as never), 'options.partitions', ['query']],
    [
      'replay query',
      () => rheo.replay('s', 'g', { query: { where: {}, bogus: 1 } } as never),
      'query.bogus',
      ['where', 'from', 'to', 'afterSequence', 'untilSequence'],
    ],
    ['reset options', () => rheo.reset('s', 'g', { confirm: true, bogus: 1 } as never), 'options.bogus', ['confirm', 'start']],
    ['deleteGroup options', () => rheo.deleteGroup('s', 'g', { confirm: true, bogus: 1 } as never), 'options.bogus', ['confirm']],
    ['deadLetters options', () => rheo.deadLetters('s', 'g', { bogus: 1 } as never), 'options.bogus', ['limit', 'after']],
    ['countDeadLetters options', () => rheo.countDeadLetters('s', 'g', { bogus: 1 } as never), 'options.bogus', ['since']],
    ['redrive ids', () => rheo.redrive('s', 'g', { eventIds: [], bogus: 1 } as never), 'options.bogus', ['eventIds']],
    ['redrive all', () => rheo.redrive('s', 'g', { all: true, bogus: 1 } as never), 'options.bogus', ['all']],
    ['trim options', () => rheo.trim('s', { force: true, bogus: 1 } as never), 'options.bogus', ['force']],
    ['purgeDeadLetters options', () => rheo.purgeDeadLetters('s', 'g', { all: true, bogus: 1 } as never), 'options.bogus', ['all']],
    ['skip options', () => rheo.skip('s', 'g', [lease.event.id], { reason: 'r', bogus: 1 } as never), 'options.bogus', ['reason']],
    [
      'reschedule options',
      () => rheo.reschedule('s', 'g', [lease.event.id], { delayMs: 0, delay: 1 } as never),
      'options.delay',
      ['deliverAt', 'delayMs'],
    ],
    ['cancelDelayed options', () => rheo.cancelDelayed('s', lease.event.id, { reasn: 'r' } as never), 'options.reasn', ['reason']],
    [
      'setRetention',
      () => rheo.setRetention('s', { maxEvents: 1, bogus: 1 } as never),
      'retention.bogus',
      ['maxAgeMs', 'maxEvents', 'deadLetterMaxAgeMs'],
    ],
    [
      'createStream retention',
      () => rheo.createStream('new', { retention: { maxage: 1 } } as never),
      'retention.maxage',
      ['maxAgeMs', 'maxEvents', 'deadLetterMaxAgeMs'],
    ],
  ];

  it.each(cases)('%s', async (_label, call, field, valid) => {
    const before = await snapshot();
    expectRefused(await caughtAsync(call), field, valid);
    expect(await snapshot()).toEqual(before);
  });

  it('accepts every valid key (none is refused by mistake)', async () => {
    await rheo.createStream('all-keys', {
      partitions: 1,
      ifNotExists: true,
      retention: { maxAgeMs: 1, maxEvents: 1, deadLetterMaxAgeMs: 1 },
    });
    await rheo.createGroup('s', 'all-keys', {
      start: 'beginning',
      maxAttempts: 3,
      retry: { initialMs: 1, factor: 2, maxMs: 10 },
      ordering: 'none',
      ifNotExists: true,
    });
    await rheo.append('s', { id: 'e1', key: 'k', type: 't', payload: {}, metadata: {}, partition: 1, timestamp: new Date(0), delayMs: 0 });
    await rheo.append('s', { payload: {}, deliverAt: new Date(0) }, { manager: undefined });
    await rheo.read('s', { partition: 1, afterSequence: 0, limit: 10 });
    await rheo.query({
      stream: 's',
      where: {},
      from: new Date(0),
      to: new Date(),
      afterSequence: 0,
      untilSequence: 100,
      order: 'asc',
      limit: 10,
    });
    const [l, l2] = await rheo.fetch('s', 'all-keys', { limit: 2, leaseMs: 1000, consumerId: 'c', partitions: [0, 1] });
    await rheo.renew(l, { leaseMs: 1000 });
    await rheo.settleMany([{ kind: 'nack', lease: l, reason: 'r', delayMs: 0 }]);
    await rheo.reject(l2, { reason: 'r' });
    await rheo.replay('s', 'g', { afterSequence: 0, partitions: [0] });
    await rheo.replay('s', 'g', { query: { where: { key: 'k' }, from: new Date(0), to: new Date(), afterSequence: 0, untilSequence: 9 } });
    await rheo.deadLetters('s', 'all-keys', { limit: 1, after: l2.event.id });
    await rheo.countDeadLetters('s', 'g', { since: new Date(0) });
    await rheo.trim('s', { force: false });
    await rheo.skip('s', 'all-keys', [l.event.id], { reason: 'r' });
    await rheo.reschedule('s', 'g', [], { deliverAt: new Date(0) });
    const delayed = await rheo.append('s', { payload: {}, delayMs: 1000 });
    await rheo.cancelDelayed('s', delayed.id, { reason: 'r' });
  });
});

describe('the Rheo constructor', () => {
  it('refuses an unknown option and lists the valid ones', () => {
    expectRefused(
      caught(() => new Rheo(new MemoryBackend(), { maxPayloadByte: 10 } as never)),
      'options.maxPayloadByte',
      ['maxPayloadBytes', 'maxMetadataBytes', 'maxBatchBytes'],
    );
  });
});

describe('backend construction options', () => {
  it.each<[string, () => unknown, string, string[]]>([
    ['memoryBackend', () => memoryBackend({ clock: new ManualClock(), bogus: 1 } as never), 'options.bogus', ['clock']],
    ['new MemoryBackend', () => new MemoryBackend({ clok: new ManualClock() } as never), 'options.clok', ['clock']],
    [
      'sqliteBackend',
      () => sqliteBackend({ database: ':memory:', lockTimeout: 10 } as never),
      'options.lockTimeout',
      ['database', 'install', 'clock', 'lockTimeoutMs'],
    ],
    [
      'postgresBackend',
      () => postgresBackend({ url: 'postgres://localhost/test', pool: 3 } as never),
      'options.pool',
      ['url', 'schema', 'poolSize', 'install', 'clock'],
    ],
    [
      'typeormBackend',
      () => typeormBackend({ dataSource: new DataSource({ type: 'better-sqlite3', database: ':memory:' }), bogus: 1 } as never),
      'options.bogus',
      ['dataSource', 'schema', 'install', 'clock', 'lockTimeoutMs'],
    ],
    [
      'redisBackend',
      () => redisBackend({ url: 'redis://127.0.0.1:6379', prefx: 'x' } as never),
      'prefx',
      ['url', 'client', 'options', 'cluster', 'clusterOptions', 'prefix', 'clock', 'queryScanLimit', 'durability'],
    ],
    ['rheoMigrations', () => rheoMigrations({ scheme: 'x' } as never), 'scheme', ['schema']],
    ['rheoEntities', () => rheoEntities({ scheme: 'x' } as never), 'scheme', ['schema']],
    [
      'backendFromUrl',
      () => backendFromUrl('sqlite::memory:', { prefx: 'x' } as never),
      'options.prefx',
      ['schema', 'prefix', 'install', 'readOnly'],
    ],
    [
      'redisBackend durability',
      () => redisBackend({ durability: { replicas: 1, timeout: 5 } } as never),
      'durability.timeout',
      ['replicas', 'timeoutMs'],
    ],
  ])('%s', (_label, make, field, valid) => {
    expectRefused(caught(make), field, valid);
  });
});

describe('runtime options', () => {
  const handler = async () => undefined;
  it.each<[string, () => unknown, string, string[]]>([
    [
      'Consumer',
      () => new Consumer(rheo, { stream: 's', group: 'g', maxDemnd: 5 } as never, handler),
      'options.maxDemnd',
      [
        'stream',
        'group',
        'maxDemand',
        'concurrency',
        'leaseMs',
        'pollMs',
        'consumerId',
        'partitions',
        'drainTimeoutMs',
        'timeoutMs',
        'onTimeout',
        'batch',
        'transactional',
      ],
    ],
    [
      'Consumer batch',
      () => new Consumer(rheo, { stream: 's', group: 'g', batch: { size: 2, bogus: 1 } } as never, handler),
      'batch.bogus',
      ['size', 'maxWaitMs'],
    ],
    [
      'BroadcastMember',
      () => new BroadcastMember(rheo, { stream: 's', group: 'b', ttl: 1000 } as never),
      'options.ttl',
      ['stream', 'group', 'ttlMs', 'maxAttempts', 'retry', 'ordering', 'events', 'manual', 'error'],
    ],
    [
      'BroadcastMember events',
      () => new BroadcastMember(rheo, { stream: 's', group: 'b', events: { rejoin: () => undefined } } as never),
      'events.rejoin',
      ['rejoined', 'collected', 'error', 'recovered'],
    ],
    ['Trimmer', () => new Trimmer(rheo, { intervalMs: 10, interval: 5 } as never), 'options.interval', ['intervalMs', 'holder', 'events']],
    [
      'Trimmer events',
      () => new Trimmer(rheo, { intervalMs: 10, events: { trim: () => undefined } } as never),
      'events.trim',
      ['trimmed', 'purged', 'error'],
    ],
  ])('%s', (_label, make, field, valid) => {
    expectRefused(caught(make), field, valid);
  });
});

describe('the admin service', () => {
  let admin: RheoAdmin;
  beforeEach(() => {
    admin = new RheoAdmin(rheo);
  });

  it('refuses an unknown constructor option', () => {
    expectRefused(
      caught(() => new RheoAdmin(rheo, { actr: 'cli' } as never)),
      'options.actr',
      ['consumers', 'actor', 'log'],
    );
  });

  it.each<[string, () => Promise<unknown>, string, string[]]>([
    ['overview', () => admin.overview({ limit: 10, afer: 's' } as never), 'options.afer', ['limit', 'after']],
    [
      'deadLetters',
      () => admin.deadLetters('s', 'g', { withPayload: true } as never),
      'options.withPayload',
      ['limit', 'after', 'withPayloads'],
    ],
    ['tail', () => admin.tail('s', { bogus: 1 } as never), 'options.bogus', ['where', 'limit', 'cursor']],
    [
      'append',
      () => admin.append('s', { payload: {}, deliverAt: new Date() } as never),
      'input.deliverAt',
      ['payload', 'key', 'type', 'id', 'metadata'],
    ],
    [
      'redrive',
      () => admin.redrive('s', 'g', { all: true, confirm: true, bogus: 1 } as never),
      'target.bogus',
      ['eventIds', 'all', 'confirm'],
    ],
    ['replay', () => admin.replay('s', 'g', { afterSequence: 0, bogus: 1 } as never), 'from.bogus', ['afterSequence', 'from', 'where']],
    ['reset', () => admin.reset('s', 'g', { confirm: true, bogus: 1 } as never), 'options.bogus', ['start', 'confirm']],
    ['trim', () => admin.trim('s', { bogus: 1 } as never), 'options.bogus', ['force', 'confirm']],
    ['purgeDeadLetters', () => admin.purgeDeadLetters('s', 'g', { all: true, bogus: 1 } as never), 'options.bogus', ['before', 'all']],
    [
      'skip',
      () => admin.skip('s', 'g', { eventIds: [], confirm: true, bogus: 1 } as never),
      'options.bogus',
      ['eventIds', 'reason', 'confirm'],
    ],
    [
      'reschedule',
      () => admin.reschedule('s', 'g', { eventIds: [], delayMs: 0, confirm: true, bogus: 1 } as never),
      'options.bogus',
      ['eventIds', 'deliverAt', 'delayMs', 'confirm'],
    ],
    ['cancelDelayed', () => admin.cancelDelayed('s', 'e', { confirm: true, bogus: 1 } as never), 'options.bogus', ['reason', 'confirm']],
  ])('%s', async (_label, call, field, valid) => {
    const before = await snapshot();
    expectRefused(await caughtAsync(call), field, valid);
    expect(await snapshot()).toEqual(before);
  });
});

describe('Nest module options', () => {
  it('RheoModule options: the unknown key named, the valid keys listed', () => {
    expectRefused(
      caught(() => new RheoInstance('default', { backend: memoryBackend(), maxPayloadByte: 1 } as never)),
      'maxPayloadByte',
      ['backend', 'streams', 'defaults', 'consumers', 'maxPayloadBytes', 'drainTimeoutMs', 'trimIntervalMs', 'metrics'],
    );
  });

  it('RheoModule.forRootAsync options', () => {
    expectRefused(
      caught(() => RheoModule.forRootAsync({ useFactory: () => memoryBackend(), injects: [] } as never)),
      'injects',
      ['name', 'isGlobal', 'imports', 'inject', 'useFactory'],
    );
  });

  it('a stream declaration', () => {
    expectRefused(
      caught(() => new RheoInstance('default', { backend: memoryBackend(), streams: [{ name: 'a', partition: 2 }] } as never)),
      'streams[0].partition',
      ['name', 'partitions', 'retention'],
    );
  });

  it('RheoDashboardModule options', () => {
    expectRefused(
      caught(() => resolveDashboardOptions({ readonly: false } as never)),
      'readonly',
      ['path', 'instance', 'readOnly', 'guard', 'imports', 'showPayloads'],
    );
  });
});
