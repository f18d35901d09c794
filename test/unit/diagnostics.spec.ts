// The facade's diagnostics channels, on memory and on SQLite (one case list):
// each `rheo:<operation>` TracingChannel fires start, end, asyncStart, asyncEnd
// (and error) with its documented fields; the plain channels rheo:lease,
// rheo:redelivery, rheo:settle, rheo:dead_letter and rheo:frontier fire with
// exact values; and no message carries a payload or metadata value.
import { type Backend, type Lease, ManualClock, Rheo, RheoError, TRACED_OPERATIONS } from '../../lib';
import type { SettleOp, SettleResult } from '../../lib/backend';
import type { TracedOperation } from '../../lib/core/diagnostics';
import { ChannelRecorder } from '../support/channel-recorder';
import { CLOCKED_BACKENDS, removeTempFiles } from '../support/clocked-backends';

/** Written into every payload and metadata value: no channel message may contain it. */
const MARK = `payload-marker-${process.pid}-9c41`;

const FACADE_PLAIN_CHANNELS = ['rheo:lease', 'rheo:redelivery', 'rheo:settle', 'rheo:dead_letter', 'rheo:frontier'];

afterAll(removeTempFiles);

let names = 0;
const unique = (prefix: string) => `${prefix}-${process.pid}-${++names}`;

function ev(i: number) {
  return { type: 'order.placed', key: `k${i}`, payload: { i, secret: MARK }, metadata: { note: MARK } };
}

/** The identity every delivery message carries. */
function delivery(lease: Lease) {
  return {
    stream: lease.stream,
    group: lease.group,
    consumerId: lease.consumerId,
    eventId: lease.event.id,
    partition: lease.event.partition,
    sequence: lease.event.sequence,
    attempt: lease.attempt,
  };
}

/** `backend` as a third-party one may be: its settle answers `{ ok: true }` without saying what it wrote. */
function untold(backend: Backend): Backend {
  return new Proxy(backend, {
    get(target, key) {
      if (key === 'settle')
        return async (ops: SettleOp[]): Promise<SettleResult[]> =>
          (await target.settle(ops)).map((r): SettleResult => (r.ok ? { ok: true } : r));
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe.each(CLOCKED_BACKENDS)('diagnostics channels of the facade on $name', ({ make }) => {
  let clock: ManualClock;
  let rheo: Rheo;
  let rec: ChannelRecorder;
  let stream: string;
  let group: string;
  const seen = new Set<string>();

  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 1));
    rheo = new Rheo(make(clock));
    stream = unique('s');
    group = unique('g');
    rec = new ChannelRecorder();
  });

  afterEach(async () => {
    rec.close();
    for (const name of rec.everSeen) seen.add(name);
    const text = rec.serialised();
    await rheo.close();
    expect(text).not.toContain(MARK);
  });

  /** Run one operation and check its TracingChannel: the four events, the fields at start and at asyncEnd. */
  async function expectTraced<T>(
    op: TracedOperation,
    call: () => Promise<T>,
    atStart: Record<string, unknown>,
    atEnd: (result: T) => Record<string, unknown> = () => ({}),
  ): Promise<T> {
    rec.clear();
    const result = await call();
    const records = rec.on(`rheo:${op}`);
    expect(records.map((r) => r.event)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd']);
    expect(records[0].message).toEqual({ operation: op, rheo: rheo.id, ...atStart });
    expect(records[3].message).toEqual({ operation: op, rheo: rheo.id, ...atStart, ...atEnd(result) });
    return result;
  }

  /** Run an operation that throws and check `error` carries the RheoError, followed by asyncStart and asyncEnd. */
  async function expectTracedError(op: TracedOperation, call: () => Promise<unknown>, code: string, fields: Record<string, unknown>) {
    rec.clear();
    const thrown = await call().then(
      () => null,
      (err: unknown) => err,
    );
    expect(thrown).toBeInstanceOf(RheoError);
    expect((thrown as RheoError).code).toBe(code);
    const records = rec.on(`rheo:${op}`);
    expect(records.map((r) => r.event)).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
    expect(records[0].message).toEqual({ operation: op, rheo: rheo.id, ...fields });
    for (const r of records.slice(2)) expect(r.message).toEqual({ operation: op, rheo: rheo.id, ...fields, error: thrown });
  }

  it('every facade operation fires start, end, asyncStart and asyncEnd with its fields', async () => {
    await expectTraced('createStream', () => rheo.createStream(stream, { retention: { maxEvents: 2 } }), { stream });
    await expectTraced('createGroup', () => rheo.createGroup(stream, group, { maxAttempts: 3, retry: { initialMs: 0 } }), {
      stream,
      group,
    });
    const first = await expectTraced(
      'append',
      () => rheo.append(stream, ev(1)),
      { stream, count: 1 },
      (e) => ({
        eventId: e.id,
        partition: 0,
        sequence: 1,
        repeats: 0,
      }),
    );
    expect(first.sequence).toBe(1);
    await expectTraced(
      'appendBatch',
      () => rheo.appendBatch(stream, [ev(2), ev(3), ev(4)]),
      { stream, count: 3 },
      () => ({ repeats: 0 }),
    );
    await expectTraced(
      'query',
      () => rheo.query({ stream }),
      { stream },
      () => ({ count: 4 }),
    );
    await expectTraced(
      'query',
      () => rheo.queryPage({ stream, limit: 3 }),
      { stream },
      () => ({ count: 3 }),
    );

    const [l1, l2] = await expectTraced(
      'fetch',
      () => rheo.fetch(stream, group, { limit: 2, consumerId: 'c-1', leaseMs: 1000 }),
      { stream, group, consumerId: 'c-1' },
      () => ({ count: 2 }),
    );
    await expectTraced('renew', () => rheo.renew(l1), { count: 1, ...delivery(l1) });
    await expectTraced('renew', () => rheo.renewMany([l1, l2]), { count: 2, stream, group });
    await expectTraced('ack', () => rheo.ack(l1), { count: 1, ...delivery(l1) });
    await expectTraced('nack', () => rheo.nack(l2, { reason: 'later' }), { count: 1, ...delivery(l2), reason: 'later' });
    // Default reasons are told too: what the store records.
    const again = await rheo.fetch(stream, group, { limit: 3, consumerId: 'c-2', leaseMs: 1000 });
    const bySeq = new Map(again.map((l) => [l.event.sequence, l]));
    expect([...bySeq.keys()].sort()).toEqual([2, 3, 4]);
    await expectTraced('reject', () => rheo.reject(bySeq.get(3)!), { count: 1, ...delivery(bySeq.get(3)!), reason: 'rejected' });
    await expectTraced(
      'settleMany',
      () =>
        rheo.settleMany([
          { kind: 'ack', lease: bySeq.get(2)! },
          { kind: 'ack', lease: bySeq.get(4)! },
        ]),
      { count: 2, stream, group },
    );

    const trimmed = await expectTraced(
      'trim',
      () => rheo.trim(stream),
      { stream },
      (r) => ({ count: r.removed }),
    );
    expect(trimmed.removed).toBe(2);
    const redriven = await expectTraced(
      'redrive',
      () => rheo.redrive(stream, group, { all: true }),
      { stream, group },
      (n) => ({
        count: n,
      }),
    );
    expect(redriven).toBe(1);
    const replayed = await expectTraced(
      'replay',
      () => rheo.replay(stream, group, { afterSequence: 0 }),
      { stream, group },
      (n) => ({
        count: n,
      }),
    );
    expect(typeof replayed).toBe('number');
    await expectTraced('reset', () => rheo.reset(stream, group, { confirm: true }), { stream, group });
    const purged = await expectTraced(
      'purgeDeadLetters',
      () => rheo.purgeDeadLetters(stream, group, { all: true }),
      { stream, group },
      (n) => ({
        count: n,
      }),
    );
    expect(purged).toBe(0);
    await expectTraced('deleteGroup', () => rheo.deleteGroup(stream, group, { confirm: true }), { stream, group });
  });

  it('an operation that fails fires error with the RheoError, then asyncStart and asyncEnd', async () => {
    await rheo.createStream(stream);
    await expectTracedError('fetch', () => rheo.fetch(stream, 'no-such-group', { consumerId: 'c-1' }), 'group_not_found', {
      stream,
      group: 'no-such-group',
      consumerId: 'c-1',
    });
    await expectTracedError('append', () => rheo.append('no-such-stream', ev(1)), 'stream_not_found', {
      stream: 'no-such-stream',
      count: 1,
    });
    await expectTracedError('redrive', () => rheo.redrive(stream, 'no-such-group', { all: true }), 'group_not_found', {
      stream,
      group: 'no-such-group',
    });

    // A lease that expired and was claimed again: ack and renew of the old one throw stale_lease inside their trace.
    await rheo.createGroup(stream, group);
    await rheo.append(stream, ev(1));
    const [old] = await rheo.fetch(stream, group, { consumerId: 'c-1', leaseMs: 1000 });
    clock.advance(1001);
    const [current] = await rheo.fetch(stream, group, { consumerId: 'c-2', leaseMs: 1000 });
    expect(current.attempt).toBe(2);
    await expectTracedError('ack', () => rheo.ack(old), 'stale_lease', { count: 1, ...delivery(old) });
    await expectTracedError('renew', () => rheo.renew(old), 'stale_lease', { count: 1, ...delivery(old) });
    // Nothing was settled: no settle message for the failed ack.
    expect(rec.messages('rheo:settle')).toEqual([]);
  });

  it('rheo:lease counts each fetch that handed out leases; rheo:redelivery names each lease past its first attempt', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group, { retry: { initialMs: 0 } });
    await rheo.appendBatch(stream, [ev(1), ev(2), ev(3)]);
    rec.clear();
    const leases = await rheo.fetch(stream, group, { limit: 3, consumerId: 'c-1' });
    expect(await rheo.fetch(stream, group, { consumerId: 'c-1' })).toEqual([]); // empty: no message
    expect(rec.messages('rheo:lease')).toEqual([{ stream, group, consumerId: 'c-1', count: 3 }]);
    expect(rec.messages('rheo:redelivery')).toEqual([]);

    await rheo.nack(leases[1], { reason: 'later' });
    const [redelivered] = await rheo.fetch(stream, group, { consumerId: 'c-2' });
    expect(redelivered.attempt).toBe(2);
    expect(rec.messages('rheo:lease')).toEqual([
      { stream, group, consumerId: 'c-1', count: 3 },
      { stream, group, consumerId: 'c-2', count: 1 },
    ]);
    expect(rec.messages('rheo:redelivery')).toEqual([{ ...delivery(redelivered), consumerId: 'c-2', attempt: 2 }]);
  });

  it('rheo:settle tells ack, retry, reject and dead_letter; rheo:dead_letter gives the cause (rejected, max_attempts)', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group, { maxAttempts: 2, retry: { initialMs: 0 } });
    await rheo.appendBatch(stream, [ev(1), ev(2), ev(3)]);
    const [a, b, c] = await rheo.fetch(stream, group, { limit: 3, consumerId: 'c-1' });
    rec.clear();
    await rheo.ack(a);
    await rheo.nack(b, { reason: 'try again' });
    await rheo.reject(c, { reason: 'malformed' });
    const [b2] = await rheo.fetch(stream, group, { consumerId: 'c-1' });
    expect(b2.attempt).toBe(2);
    const [result] = await rheo.settleMany([{ kind: 'nack', lease: b2, reason: 'still failing' }]);
    expect(result.ok).toBe(true);

    expect(rec.messages('rheo:settle')).toEqual([
      { ...delivery(a), outcome: 'ack' },
      { ...delivery(b), outcome: 'retry', reason: 'try again' },
      { ...delivery(c), outcome: 'reject', reason: 'malformed' },
      { ...delivery(b2), outcome: 'dead_letter', reason: 'still failing' },
    ]);
    expect(rec.messages('rheo:dead_letter')).toEqual([
      { ...delivery(c), reason: 'malformed', cause: 'rejected' },
      { ...delivery(b2), reason: 'still failing', cause: 'max_attempts' },
    ]);
    // The store agrees: both are dead letters.
    expect((await rheo.deadLetters(stream, group)).map((d) => d.sequence).sort()).toEqual([2, 3]);
  });

  it('a backend whose settle does not tell what it wrote: rheo:settle classifies by the config this process read', async () => {
    const quiet = new Rheo(untold(make(clock)));
    try {
      await quiet.createStream(stream);
      await quiet.createGroup(stream, group, { maxAttempts: 2, retry: { initialMs: 0 } });
      await quiet.appendBatch(stream, [ev(1)]);
      const [a] = await quiet.fetch(stream, group, { consumerId: 'c-1' });
      rec.clear();
      expect(await quiet.settleMany([{ kind: 'nack', lease: a, reason: 'try again' }])).toEqual([{ ok: true }]);
      const [a2] = await quiet.fetch(stream, group, { consumerId: 'c-1' });
      await quiet.nack(a2, { reason: 'still failing' });
      expect(rec.messages('rheo:settle')).toEqual([
        { ...delivery(a), outcome: 'retry', reason: 'try again' },
        { ...delivery(a2), outcome: 'dead_letter', reason: 'still failing' },
      ]);
    } finally {
      await quiet.close();
    }
  });

  it('rheo:dead_letter tells a delivery a fetch dead-lettered (its lease expired on the last attempt), cause lease_expired', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group, { maxAttempts: 2 });
    await rheo.appendBatch(stream, [ev(1), ev(2)]);
    const [a] = await rheo.fetch(stream, group, { limit: 1, leaseMs: 1000, consumerId: 'crashed' });
    clock.advance(1001);
    const [a2] = await rheo.fetch(stream, group, { limit: 1, leaseMs: 1000, consumerId: 'crashed' });
    expect([a2.event.id, a2.attempt]).toEqual([a.event.id, 2]);
    clock.advance(1001);
    rec.clear();
    // The crashed process never settled attempt 2 of 2: the next claim dead-letters it and leases the next event.
    const leases = await rheo.fetch(stream, group, { limit: 1, leaseMs: 1000, consumerId: 'c-1' });
    expect(leases.map((l) => l.event.sequence)).toEqual([2]);
    expect(rec.messages('rheo:dead_letter')).toEqual([
      { ...delivery(a2), consumerId: 'c-1', reason: 'lease expired on attempt 2 of 2', cause: 'lease_expired' },
    ]);
    // Not a settle: no settle was written.
    expect(rec.messages('rheo:settle')).toEqual([]);
    expect((await rheo.deadLetters(stream, group)).map((d) => [d.eventId, d.reason])).toEqual([
      [a.event.id, 'lease expired on attempt 2 of 2'],
    ]);
  });

  it('rheo:frontier fires once per move of a partition frontier, not once per lag read', async () => {
    await rheo.createStream(stream, { partitions: 2 });
    await rheo.createGroup(stream, group);
    await rheo.appendBatch(stream, [
      { ...ev(1), partition: 0 },
      { ...ev(2), partition: 0 },
      { ...ev(3), partition: 1 },
    ]);
    rec.clear();
    await rheo.lag(stream, group);
    await rheo.lag(stream, group); // no move: no message
    expect(rec.messages('rheo:frontier')).toEqual([
      { stream, group, partition: 0, frontier: 0, highWatermark: 2 },
      { stream, group, partition: 1, frontier: 0, highWatermark: 1 },
    ]);
    const leases = await rheo.fetch(stream, group, { limit: 3 });
    const p0first = leases.find((l) => l.event.partition === 0 && l.event.sequence === 1)!;
    await rheo.ack(p0first);
    rec.clear();
    await rheo.groupInfo(stream, group);
    await rheo.lag(stream, group);
    expect(rec.messages('rheo:frontier')).toEqual([{ stream, group, partition: 0, frontier: 1, highWatermark: 2 }]);
  });

  it('fired every traced operation and every facade plain channel in this run', () => {
    for (const op of TRACED_OPERATIONS) expect(seen).toContain(`rheo:${op}`);
    for (const name of FACADE_PLAIN_CHANNELS) expect(seen).toContain(name);
  });
});
