import type { JsonValue, Lease, RheoErrorCode } from '../../lib';
import { Rheo, RheoError } from '../../lib';
import { MAX_BATCH, MAX_NAME_LENGTH } from '../../lib/core/limits';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { expectRefused, leasedRheo, observe } from '../support/refusals';

/**
 * Bad input at every public entry point of `Rheo`: a RheoError with the right code
 * and field, and nothing written (every observable figure of the store unchanged).
 */

let rheo: Rheo;
let lease: Lease;

beforeEach(async () => {
  ({ rheo, lease } = await leasedRheo(4));
});

async function expectRejected(call: () => Promise<unknown>, code: RheoErrorCode, field: string): Promise<void> {
  const e = await expectRefused(rheo, call, code, field);
  expect(e.message).toContain(field.replace(/\[\d+\]$/, ''));
}

type Case = [label: string, call: () => Promise<unknown>, field: string];
const invalid = (cases: Case[]) => it.each(cases)('%s', (_label, call, field) => expectRejected(call, 'invalid_argument', field));

const cycle: Record<string, unknown> = { a: 1 };
cycle.self = cycle;
class Curve {
  rate = 1;
}
const deep = (n: number): unknown => (n === 0 ? 1 : { d: deep(n - 1) });

const badNames: Array<[string, unknown]> = [
  ['empty', ''],
  ['too long', 'x'.repeat(MAX_NAME_LENGTH + 1)],
  ['a newline', 'a\nb'],
  ['a NUL', 'a\u0000b'],
  ['a DEL', 'a\u007fb'],
  ['a number', 42],
  ['an object', {}],
];

describe('names', () => {
  it('accepts a name of exactly MAX_NAME_LENGTH characters, unicode and punctuation', async () => {
    const name = 'n'.repeat(MAX_NAME_LENGTH);
    await rheo.createStream(name);
    await rheo.createStream('émissions🌍:a b.c-d_e');
    expect((await rheo.listStreams()).map((s) => s.name)).toEqual(expect.arrayContaining([name, 'émissions🌍:a b.c-d_e']));
  });

  const n = (v: unknown) => v as string;
  describe.each(badNames)('rejects %s', (_label, bad) => {
    invalid([
      ['createStream stream', () => rheo.createStream(n(bad)), 'stream'],
      ['createGroup stream', () => rheo.createGroup(n(bad), 'g2'), 'stream'],
      ['createGroup group', () => rheo.createGroup('s', n(bad)), 'group'],
      ['append stream', () => rheo.append(n(bad), { payload: 1 }), 'stream'],
      ['append id', () => rheo.append('s', { id: n(bad), payload: 1 }), 'event.id'],
      ['append key', () => rheo.append('s', { key: n(bad), payload: 1 }), 'event.key'],
      ['append type', () => rheo.append('s', { type: n(bad), payload: 1 }), 'event.type'],
      ['appendBatch key', () => rheo.appendBatch('s', [{ payload: 1 }, { key: n(bad), payload: 1 }]), 'events[1].key'],
      ['read stream', () => rheo.read(n(bad)), 'stream'],
      ['query stream', () => rheo.query({ stream: n(bad) }), 'query.stream'],
      ['query where.type', () => rheo.queryPage({ stream: 's', where: { type: n(bad) } }), 'query.where.type'],
      ['query where.key', () => rheo.query({ stream: 's', where: { key: n(bad) } }), 'query.where.key'],
      ['fetch stream', () => rheo.fetch(n(bad), 'g'), 'stream'],
      ['fetch group', () => rheo.fetch('s', n(bad)), 'group'],
      ['fetch consumerId', () => rheo.fetch('s', 'g', { consumerId: n(bad) }), 'consumerId'],
      ['ack leaseId', () => rheo.ack({ ...lease, leaseId: n(bad) }), 'lease.leaseId'],
      ['renew group', () => rheo.renew({ ...lease, group: n(bad) }), 'lease.group'],
      ['lag group', () => rheo.lag('s', n(bad)), 'group'],
      ['groupInfo stream', () => rheo.groupInfo(n(bad), 'g'), 'stream'],
      ['listGroups stream', () => rheo.listGroups(n(bad)), 'stream'],
      ['deadLetters after', () => rheo.deadLetters('s', 'g', { after: n(bad) }), 'after'],
      ['redrive eventIds', () => rheo.redrive('s', 'g', { eventIds: ['ok', n(bad)] }), 'eventIds[1]'],
      ['replay group', () => rheo.replay('s', n(bad), { afterSequence: 0 }), 'group'],
      ['reset stream', () => rheo.reset(n(bad), 'g', { confirm: true }), 'stream'],
    ]);
  });
});

describe('constructor', () => {
  it.each([
    ['no backend', () => new Rheo(undefined as never), 'backend'],
    ['not a backend', () => new Rheo({} as never), 'backend'],
    ['options not an object', () => new Rheo(new MemoryBackend(), null as never), 'options'],
    ['maxPayloadBytes 0', () => new Rheo(new MemoryBackend(), { maxPayloadBytes: 0 }), 'maxPayloadBytes'],
    ['maxPayloadBytes 1.5', () => new Rheo(new MemoryBackend(), { maxPayloadBytes: 1.5 }), 'maxPayloadBytes'],
    ['maxPayloadBytes a string', () => new Rheo(new MemoryBackend(), { maxPayloadBytes: '10' as never }), 'maxPayloadBytes'],
  ] as Array<[string, () => unknown, string]>)('rejects %s', (_label, make, field) => {
    let caught: unknown;
    try {
      make();
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RheoError);
    expect({ code: (caught as RheoError).code, field: (caught as RheoError).field }).toEqual({ code: 'invalid_argument', field });
  });
});

describe('createStream', () => {
  invalid([
    ['0 partitions', () => rheo.createStream('s2', { partitions: 0 }), 'partitions'],
    ['1025 partitions', () => rheo.createStream('s2', { partitions: 1025 }), 'partitions'],
    ['1.5 partitions', () => rheo.createStream('s2', { partitions: 1.5 }), 'partitions'],
    ['partitions as a string', () => rheo.createStream('s2', { partitions: '2' as never }), 'partitions'],
    ['options not an object', () => rheo.createStream('s2', 'x' as never), 'options'],
    ['null options', () => rheo.createStream('s2', null as never), 'options'],
  ]);

  it('accepts 1024 partitions', async () => {
    expect((await rheo.createStream('wide', { partitions: 1024 })).partitions).toBe(1024);
  });
});

describe('createGroup', () => {
  invalid([
    ['maxAttempts 0', () => rheo.createGroup('s', 'g2', { maxAttempts: 0 }), 'maxAttempts'],
    ['maxAttempts 1.5', () => rheo.createGroup('s', 'g2', { maxAttempts: 1.5 }), 'maxAttempts'],
    ['retry not an object', () => rheo.createGroup('s', 'g2', { retry: 5 as never }), 'retry'],
    ['negative retry.initialMs', () => rheo.createGroup('s', 'g2', { retry: { initialMs: -1 } }), 'retry.initialMs'],
    ['retry.factor below 1', () => rheo.createGroup('s', 'g2', { retry: { factor: 0.5 } }), 'retry.factor'],
    ['retry.factor NaN', () => rheo.createGroup('s', 'g2', { retry: { factor: NaN } }), 'retry.factor'],
    ['retry.maxMs below initialMs', () => rheo.createGroup('s', 'g2', { retry: { initialMs: 500, maxMs: 100 } }), 'retry.maxMs'],
    ['an unknown ordering', () => rheo.createGroup('s', 'g2', { ordering: 'total' as never }), 'ordering'],
    ['an unknown start', () => rheo.createGroup('s', 'g2', { start: 'middle' as never }), 'start'],
    ['a negative afterSequence', () => rheo.createGroup('s', 'g2', { start: { afterSequence: -1 } }), 'start.afterSequence'],
    [
      'afterSequence on a missing partition',
      () => rheo.createGroup('s', 'g2', { start: { afterSequence: { 9: 1 } } }),
      'start.afterSequence[9]',
    ],
    [
      'afterSequence with a fractional value',
      () => rheo.createGroup('s', 'g2', { start: { afterSequence: { 1: 0.5 } } }),
      'start.afterSequence[1]',
    ],
    ['an invalid start time', () => rheo.createGroup('s', 'g2', { start: { at: new Date('nope') } }), 'start.at'],
    ['null options', () => rheo.createGroup('s', 'g2', null as never), 'options'],
  ]);
});

describe('append and appendBatch payloads', () => {
  invalid([
    ['an undefined payload', () => rheo.append('s', { payload: undefined as never }), 'event.payload'],
    ['a function', () => rheo.append('s', { payload: (() => 1) as never }), 'event.payload'],
    ['a BigInt', () => rheo.append('s', { payload: BigInt(1) as never }), 'event.payload'],
    ['a symbol', () => rheo.append('s', { payload: Symbol('x') as never }), 'event.payload'],
    ['NaN', () => rheo.append('s', { payload: NaN }), 'event.payload'],
    ['Infinity deep inside', () => rheo.append('s', { payload: { a: [1, { b: -Infinity }] } }), 'event.payload.a[1].b'],
    ['a cycle (named where it closes)', () => rheo.append('s', { payload: cycle as never }), 'event.payload.self'],
    ['a class instance holding NaN', () => rheo.append('s', { payload: Object.assign(new Curve(), { rate: NaN }) }), 'event.payload.rate'],
    ['an invalid Date', () => rheo.append('s', { payload: new Date('x') as never }), 'event.payload'],
    ['a Map', () => rheo.append('s', { payload: new Map() as never }), 'event.payload'],
    ['a nested function', () => rheo.append('s', { payload: { a: () => 1 } as never }), 'event.payload.a'],
    ['an undefined array item', () => rheo.append('s', { payload: [1, undefined] as never }), 'event.payload[1]'],
    ['nesting deeper than 64', () => rheo.append('s', { payload: deep(100) as never }), `event.payload${'.d'.repeat(65)}`],
  ]);

  it('rejects a payload over maxPayloadBytes with payload_too_large, and accepts one at the limit', async () => {
    const small = new Rheo(rheo.backend, { maxPayloadBytes: 100 });
    await expectRejected(() => small.append('s', { payload: 'x'.repeat(99) }), 'payload_too_large', 'event.payload');
    await expectRejected(
      () => small.appendBatch<JsonValue>('s', [{ payload: 1 }, { payload: { big: 'x'.repeat(100) } }]),
      'payload_too_large',
      'events[1].payload',
    );
    expect((await small.append('s', { payload: 'x'.repeat(98) })).sequence).toBe(2); // exactly 100 bytes of JSON
  });

  it('bounds payloads at 1 MiB by default, counting UTF-8 bytes', async () => {
    await expectRejected(() => rheo.append('s', { payload: 'x'.repeat(1024 * 1024) }), 'payload_too_large', 'event.payload');
    await expectRejected(() => rheo.append('s', { payload: 'é'.repeat(512 * 1024) }), 'payload_too_large', 'event.payload');
    expect((await rheo.append('s', { payload: 'x'.repeat(1024 * 1024 - 2) })).sequence).toBe(2);
  });
});

describe('append and appendBatch fields', () => {
  invalid([
    ['an input that is not an object', () => rheo.append('s', null as never), 'event'],
    ['an array input', () => rheo.append('s', [] as never), 'event'],
    ['metadata not an object', () => rheo.append('s', { payload: 1, metadata: 'x' as never }), 'event.metadata'],
    ['metadata with a function', () => rheo.append('s', { payload: 1, metadata: { f: (() => 1) as never } }), 'event.metadata.f'],
    ['metadata with NaN', () => rheo.append('s', { payload: 1, metadata: { schemaVersion: NaN } }), 'event.metadata.schemaVersion'],
    ['partition out of range', () => rheo.append('s', { payload: 1, partition: 4 }), 'event.partition'],
    ['a negative partition', () => rheo.append('s', { payload: 1, partition: -1 }), 'event.partition'],
    ['a fractional partition', () => rheo.append('s', { payload: 1, partition: 1.5 }), 'event.partition'],
    ['an invalid timestamp', () => rheo.append('s', { payload: 1, timestamp: new Date('x') }), 'event.timestamp'],
    ['a string timestamp', () => rheo.append('s', { payload: 1, timestamp: '2026-01-01' as never }), 'event.timestamp'],
    ['options not an object', () => rheo.append('s', { payload: 1 }, null as never), 'options'],
    ['a manager on a backend without transactional append', () => rheo.append('s', { payload: 1 }, { manager: {} }), 'options.manager'],
    ['a batch that is not an array', () => rheo.appendBatch('s', { payload: 1 } as never), 'events'],
    [
      'a batch over MAX_BATCH',
      () =>
        rheo.appendBatch(
          's',
          Array.from({ length: MAX_BATCH + 1 }, () => ({ payload: 1 })),
        ),
      'events',
    ],
    [
      'one bad event late in a batch (none written)',
      () => rheo.appendBatch('s', [{ payload: 1 }, { id: 'new', payload: 2 }, { payload: NaN }]),
      'events[2].payload',
    ],
    ['one bad partition in a batch', () => rheo.appendBatch('s', [{ payload: 1 }, { payload: 2, partition: 7 }]), 'events[1].partition'],
  ]);

  it('writes nothing of a batch with one bad event: its good ids stay free', async () => {
    await expect(rheo.appendBatch('s', [{ id: 'a', payload: 1 }, { payload: () => 1 } as never])).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    const stored = await rheo.append('s', { id: 'a', payload: 'second try' });
    expect(stored.payload).toBe('second try');
  });
});

describe('read and query', () => {
  invalid([
    ['read partition out of range', () => rheo.read('s', { partition: 4 }), 'partition'],
    ['read negative afterSequence', () => rheo.read('s', { afterSequence: -1 }), 'afterSequence'],
    ['read limit 0', () => rheo.read('s', { limit: 0 }), 'limit'],
    ['read limit 1001', () => rheo.read('s', { limit: 1001 }), 'limit'],
    ['read options not an object', () => rheo.read('s', 'x' as never), 'options'],
    ['query not an object', () => rheo.query(null as never), 'query'],
    ['query where not an object', () => rheo.query({ stream: 's', where: 'x' as never }), 'query.where'],
    ['query unknown filter', () => rheo.query({ stream: 's', where: { colour: 'red' } as never }), 'query.where.colour'],
    ['query partition out of range', () => rheo.query({ stream: 's', where: { partition: 4 } }), 'query.where.partition'],
    ['query metadata not an object', () => rheo.query({ stream: 's', where: { metadata: 1 as never } }), 'query.where.metadata'],
    ['query payload filter not JSON', () => rheo.query({ stream: 's', where: { payload: { a: NaN } } }), 'query.where.payload.a'],
    ['query order', () => rheo.query({ stream: 's', order: 'up' as never }), 'query.order'],
    ['query limit 0', () => rheo.queryPage({ stream: 's', limit: 0 }), 'query.limit'],
    ['query limit 1001', () => rheo.query({ stream: 's', limit: 1001 }), 'query.limit'],
    ['query from', () => rheo.query({ stream: 's', from: new Date(NaN) }), 'query.from'],
    ['query to', () => rheo.query({ stream: 's', to: 5 as never }), 'query.to'],
    ['query afterSequence', () => rheo.query({ stream: 's', afterSequence: -1 }), 'query.afterSequence'],
    ['query untilSequence', () => rheo.query({ stream: 's', untilSequence: 1.5 }), 'query.untilSequence'],
    ['a forged cursor', () => rheo.queryPage({ stream: 's', cursor: 'not-a-cursor' }), 'cursor'],
    ['a cursor of the wrong type', () => rheo.queryPage({ stream: 's', cursor: 5 as never }), 'cursor'],
  ]);
});

describe('fetch', () => {
  invalid([
    ['limit 0', () => rheo.fetch('s', 'g', { limit: 0 }), 'limit'],
    ['limit 1001', () => rheo.fetch('s', 'g', { limit: 1001 }), 'limit'],
    ['limit 1.5', () => rheo.fetch('s', 'g', { limit: 1.5 }), 'limit'],
    ['leaseMs 0', () => rheo.fetch('s', 'g', { leaseMs: 0 }), 'leaseMs'],
    ['leaseMs over a day', () => rheo.fetch('s', 'g', { leaseMs: 24 * 3600 * 1000 + 1 }), 'leaseMs'],
    ['empty partitions', () => rheo.fetch('s', 'g', { partitions: [] }), 'partitions'],
    ['partitions not an array', () => rheo.fetch('s', 'g', { partitions: 1 as never }), 'partitions'],
    ['a partition out of range', () => rheo.fetch('s', 'g', { partitions: [0, 4] }), 'partitions[1]'],
    ['options not an object', () => rheo.fetch('s', 'g', null as never), 'options'],
  ]);
});

describe('renew and settle', () => {
  const withEvent = (patch: Record<string, unknown>) => ({ ...lease, event: { ...lease.event, ...patch } }) as Lease;
  invalid([
    ['ack of no lease', () => rheo.ack(null as never), 'lease'],
    ['ack of a lease without leaseId', () => rheo.ack({ ...lease, leaseId: undefined } as never), 'lease.leaseId'],
    ['ack of a lease with a numeric receipt', () => rheo.ack({ ...lease, receipt: 5 } as never), 'lease.receipt'],
    ['ack of a lease with attempt 0', () => rheo.ack({ ...lease, attempt: 0 }), 'lease.attempt'],
    ['ack of a lease without event', () => rheo.ack({ ...lease, event: undefined } as never), 'lease.event'],
    ['ack of a lease with a bad event partition', () => rheo.ack(withEvent({ partition: 'x' })), 'lease.event.partition'],
    ['ack of a lease with event sequence 0', () => rheo.ack(withEvent({ sequence: 0 })), 'lease.event.sequence'],
    ['nack with a negative delay', () => rheo.nack(lease, { delayMs: -1 }), 'delayMs'],
    ['nack with a fractional delay', () => rheo.nack(lease, { delayMs: 1.5 }), 'delayMs'],
    ['nack with a numeric reason', () => rheo.nack(lease, { reason: 5 as never }), 'reason'],
    ['nack with options not an object', () => rheo.nack(lease, null as never), 'options'],
    ['reject with a numeric reason', () => rheo.reject(lease, { reason: 5 as never }), 'reason'],
    ['renew with leaseMs 0', () => rheo.renew(lease, { leaseMs: 0 }), 'leaseMs'],
    ['renew with options not an object', () => rheo.renew(lease, null as never), 'options'],
    ['renewMany of a non-array', () => rheo.renewMany(lease as never), 'leases'],
    ['renewMany with one bad lease', () => rheo.renewMany([lease, { ...lease, attempt: -1 }]), 'leases[1].attempt'],
    ['settleMany of a non-array', () => rheo.settleMany({} as never), 'settles'],
    ['settleMany with a null settle', () => rheo.settleMany([null as never]), 'settles[0]'],
    ['settleMany with an unknown kind', () => rheo.settleMany([{ kind: 'defer', lease } as never]), 'settles[0].kind'],
    [
      'settleMany with a good ack then a bad nack (nothing applied)',
      () =>
        rheo.settleMany([
          { kind: 'ack', lease },
          { kind: 'nack', lease, delayMs: -5 },
        ]),
      'settles[1].delayMs',
    ],
    [
      'settleMany with a bad reason',
      () =>
        rheo.settleMany([
          { kind: 'ack', lease },
          { kind: 'reject', lease, reason: {} as never },
        ]),
      'settles[1].reason',
    ],
    [
      'settleMany over MAX_BATCH',
      () => rheo.settleMany(Array.from({ length: MAX_BATCH + 1 }, () => ({ kind: 'ack' as const, lease }))),
      'settles',
    ],
    ['renewMany over MAX_BATCH', () => rheo.renewMany(Array.from({ length: MAX_BATCH + 1 }, () => lease)), 'leases'],
    ['releaseMany over MAX_BATCH', () => rheo.releaseMany(Array.from({ length: MAX_BATCH + 1 }, () => lease)), 'leases'],
    ['releaseMany with a forged lease', () => rheo.releaseMany([{ ...lease, attempt: 0 }]), 'lease.attempt'],
  ]);

  it('cuts an over-long reason on a code point, never through a surrogate pair', async () => {
    await rheo.reject(lease, { reason: `${'r'.repeat(999)}🌍 and more` });
    const [dead] = await rheo.deadLetters('s', 'g');
    expect(dead.reason.isWellFormed()).toBe(true);
    expect(dead.reason.startsWith('r'.repeat(999))).toBe(true);
    expect(dead.reason).toHaveLength(1000);
  });

  it('truncates an over-long reason instead of failing', async () => {
    await rheo.reject(lease, { reason: 'r'.repeat(5000) });
    const [dead] = await rheo.deadLetters('s', 'g');
    expect(dead.reason).toBe('r'.repeat(1000));
  });
});

describe('replay, reset, dead letters and redrive', () => {
  invalid([
    ['replay with no options', () => rheo.replay('s', 'g', null as never), 'options'],
    ['replay with none of afterSequence, from, query', () => rheo.replay('s', 'g', {} as never), 'options'],
    ['replay with two of them', () => rheo.replay('s', 'g', { afterSequence: 0, from: new Date() } as never), 'options'],
    ['replay from a negative sequence', () => rheo.replay('s', 'g', { afterSequence: -1 }), 'afterSequence'],
    ['replay from an invalid time', () => rheo.replay('s', 'g', { from: new Date('x') }), 'from'],
    ['replay of a partition out of range', () => rheo.replay('s', 'g', { afterSequence: 0, partitions: [9] }), 'partitions[0]'],
    ['replay with a query that is not an object', () => rheo.replay('s', 'g', { query: 'x' as never }), 'query'],
    ['replay with an unknown query filter', () => rheo.replay('s', 'g', { query: { where: { bogus: 1 } as never } }), 'query.where.bogus'],
    ['reset to an unknown start', () => rheo.reset('s', 'g', { confirm: true, start: 'middle' as never }), 'start'],
    [
      'reset to a negative afterSequence',
      () => rheo.reset('s', 'g', { confirm: true, start: { afterSequence: -1 } }),
      'start.afterSequence',
    ],
    ['reset to an invalid time', () => rheo.reset('s', 'g', { confirm: true, start: { at: 'noon' as never } }), 'start.at'],
    ['deadLetters limit 0', () => rheo.deadLetters('s', 'g', { limit: 0 }), 'limit'],
    ['deadLetters options not an object', () => rheo.deadLetters('s', 'g', 1 as never), 'options'],
    ['redrive with empty options', () => rheo.redrive('s', 'g', {} as never), 'options'],
    ['redrive with all: false', () => rheo.redrive('s', 'g', { all: false } as never), 'options'],
    ['redrive with both all and eventIds', () => rheo.redrive('s', 'g', { all: true, eventIds: [] } as never), 'options'],
    ['redrive with eventIds not an array', () => rheo.redrive('s', 'g', { eventIds: 'x' } as never), 'options'],
  ]);

  it.each([
    ['confirm false', { confirm: false }],
    ['confirm missing', {}],
    ['confirm truthy but not true', { confirm: 'yes' }],
    ['no options', undefined],
  ])('refuses reset with %s: confirm_required, nothing changed', (_label, options) =>
    expectRejected(() => rheo.reset('s', 'g', options as never), 'confirm_required', 'confirm'),
  );
});

describe('missing streams and groups are not bad input', () => {
  it.each([
    ['append', () => rheo.append('none', { payload: 1 }), 'stream_not_found'],
    ['fetch', () => rheo.fetch('s', 'none'), 'group_not_found'],
    ['replay', () => rheo.replay('s', 'none', { afterSequence: 0 }), 'group_not_found'],
    ['reset', () => rheo.reset('s', 'none', { confirm: true }), 'group_not_found'],
    ['redrive', () => rheo.redrive('s', 'none', { all: true }), 'group_not_found'],
    ['ack on a missing group', () => rheo.ack({ ...lease, group: 'none' }), 'group_not_found'],
  ] as Array<[string, () => Promise<unknown>, RheoErrorCode]>)('%s', async (_label, call, code) => {
    const before = await observe(rheo);
    await expect(call()).rejects.toMatchObject({ name: 'RheoError', code });
    expect(await observe(rheo)).toEqual(before);
  });
});
