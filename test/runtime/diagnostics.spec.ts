// The runtime's diagnostics channels, on memory and on SQLite (one case list): a
// real Consumer with handlers that ack, throw, reject, retry and resolve with
// garbage; a lease taken over by another consumer; renewals failing on a closed
// backend until the lease expires; a buffered lease too close to expiry; fetch
// errors; consumer start and stop. Each channel's message is checked field by
// field, and none carries a payload or metadata value.
import {
  CHANNELS,
  type DeliveryControl,
  Consumer,
  type Lease,
  ManualClock,
  Rheo,
  RheoError,
  RheoReject,
  RheoRetry,
  type RheoEvent,
} from '../../lib';
import { ChannelRecorder, PLAIN_CHANNEL_NAMES } from '../support/channel-recorder';
import { CLOCKED_BACKENDS, removeTempFiles } from '../support/clocked-backends';
import { drainAll, gate, startConsumer, unique } from './helpers';
import { until } from '../support/until';

/** Written into every payload and metadata value: no channel message may contain it. */
const MARK = `payload-marker-${process.pid}-51be`;

afterAll(removeTempFiles);

type Kind = 'ack' | 'throw' | 'reject' | 'retry' | 'value';

function ev(kind: Kind) {
  return { type: 'job', payload: { kind, secret: MARK }, metadata: { note: MARK } };
}

const kindOf = (lease: Lease) => (lease.event.payload as { kind: Kind }).kind;

/** A handler that holds its lease until the signal aborts (a lost or expired lease, a drain timeout). */
function untilAborted(started: () => void) {
  return (_lease: Lease, { signal }: DeliveryControl) =>
    new Promise<void>((resolve) => {
      started();
      signal.addEventListener('abort', () => resolve());
    });
}

describe.each(CLOCKED_BACKENDS)('diagnostics channels of the runtime on $name', ({ make }) => {
  let clock: ManualClock;
  let rheo: Rheo;
  let rec: ChannelRecorder;
  let stream: string;
  let group: string;
  const seen = new Set<string>();

  beforeEach(() => {
    clock = new ManualClock(Date.UTC(2026, 0, 1));
    rheo = new Rheo(make(clock));
    stream = unique('s');
    group = unique('g');
    rec = new ChannelRecorder();
  });

  afterEach(async () => {
    await drainAll();
    rec.close();
    for (const name of rec.everSeen) seen.add(name);
    const text = rec.serialised();
    await rheo.close();
    expect(text).not.toContain(MARK);
  });

  /** The identity messages carry for `event` delivered to `consumerId` at `attempt`. */
  function delivery(event: RheoEvent, consumerId: string, attempt: number) {
    return { stream, group, consumerId, eventId: event.id, partition: event.partition, sequence: event.sequence, attempt };
  }

  it('handler outcomes: rheo:process, rheo:handler:error, rheo:settle, rheo:dead_letter, rheo:redelivery, rheo:lease, consumer start and stop', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group, { maxAttempts: 2, retry: { initialMs: 0 } });
    const kinds: Kind[] = ['ack', 'throw', 'reject', 'retry', 'value'];
    const appended = await rheo.appendBatch(stream, kinds.map(ev));
    const [ack, thrown, rejected, retried, valued] = appended;
    const event: Record<Kind, RheoEvent> = { ack, throw: thrown, reject: rejected, retry: retried, value: valued };
    rec.clear();

    const g = startConsumer(
      rheo,
      { stream, group, consumerId: 'c-1', concurrency: 2, maxDemand: 4, leaseMs: 60_000, pollMs: 10 },
      async (lease) => {
        switch (kindOf(lease)) {
          case 'throw':
            throw new Error('boom');
          case 'reject':
            throw new RheoReject('malformed');
          case 'retry':
            if (lease.attempt === 1) throw new RheoRetry('not yet');
            return;
          case 'value':
            // Not an outcome: the Consumer nacks it and reports a handler error.
            if (lease.attempt === 1) return 42 as never;
            return;
        }
      },
    );
    await until('eight runs settled', () => rec.messages('rheo:settle').length === 8 && g.inflight === 0);
    expect(await g.drain(1000)).toBe('drained');
    const valueReason = (rec.messages('rheo:handler:error').find((m) => m.eventId === event.value.id)?.reason ?? '') as string;
    expect(valueReason).toMatch(/^the handler resolved with 42/);

    expect(rec.messages('rheo:consumer:start')).toEqual([{ stream, group, consumerId: 'c-1' }]);
    expect(rec.messages('rheo:consumer:stop')).toEqual([{ stream, group, consumerId: 'c-1', reason: 'drained' }]);

    // rheo:process: one trace per handler run, the outcome and reason set by asyncEnd.
    const runs = new Map<string, { events: string[]; first: Record<string, unknown>; last: Record<string, unknown> }>();
    for (const r of rec.on('rheo:process')) {
      const key = `${r.message.sequence as number}@${r.message.attempt as number}`;
      const run = runs.get(key) ?? { events: [], first: r.message, last: r.message };
      run.events.push(r.event!);
      run.last = r.message;
      runs.set(key, run);
    }
    const resolved = ['start', 'end', 'asyncStart', 'asyncEnd'];
    const threw = ['start', 'end', 'error', 'asyncStart', 'asyncEnd'];
    const expected: Array<[Kind, number, string[], Record<string, unknown>]> = [
      ['ack', 1, resolved, { outcome: 'ack' }],
      ['throw', 1, threw, { outcome: 'nack', reason: 'boom', error: expect.objectContaining({ message: 'boom' }) }],
      ['throw', 2, threw, { outcome: 'nack', reason: 'boom', error: expect.objectContaining({ message: 'boom' }) }],
      ['reject', 1, threw, { outcome: 'reject', reason: 'malformed', error: expect.any(RheoReject) }],
      ['retry', 1, threw, { outcome: 'nack', reason: 'not yet', error: expect.any(RheoRetry) }],
      ['retry', 2, resolved, { outcome: 'ack' }],
      ['value', 1, resolved, { outcome: 'nack', reason: valueReason }],
      ['value', 2, resolved, { outcome: 'ack' }],
    ];
    expect([...runs.keys()].sort()).toEqual(expected.map(([k, a]) => `${event[k].sequence}@${a}`).sort());
    for (const [kind, attempt, events, end] of expected) {
      const run = runs.get(`${event[kind].sequence}@${attempt}`)!;
      const base = { ...delivery(event[kind], 'c-1', attempt), eventTimestamp: event[kind].timestamp };
      expect(run.events).toEqual(events);
      expect(run.first).toEqual(base);
      expect(run.last).toEqual({ ...base, ...end });
    }

    const bySeqAttempt = (a: Record<string, unknown>, b: Record<string, unknown>) =>
      (a.sequence as number) - (b.sequence as number) || (a.attempt as number) - (b.attempt as number);
    expect(rec.messages('rheo:settle').sort(bySeqAttempt)).toEqual([
      { ...delivery(event.ack, 'c-1', 1), outcome: 'ack' },
      { ...delivery(event.throw, 'c-1', 1), outcome: 'retry', reason: 'boom' },
      { ...delivery(event.throw, 'c-1', 2), outcome: 'dead_letter', reason: 'boom' },
      { ...delivery(event.reject, 'c-1', 1), outcome: 'reject', reason: 'malformed' },
      { ...delivery(event.retry, 'c-1', 1), outcome: 'retry', reason: 'not yet' },
      { ...delivery(event.retry, 'c-1', 2), outcome: 'ack' },
      { ...delivery(event.value, 'c-1', 1), outcome: 'retry', reason: valueReason },
      { ...delivery(event.value, 'c-1', 2), outcome: 'ack' },
    ]);
    expect(rec.messages('rheo:dead_letter').sort(bySeqAttempt)).toEqual([
      { ...delivery(event.throw, 'c-1', 2), reason: 'boom', cause: 'max_attempts' },
      { ...delivery(event.reject, 'c-1', 1), reason: 'malformed', cause: 'rejected' },
    ]);
    // RheoReject and RheoRetry are decisions, not handler errors.
    expect(rec.messages('rheo:handler:error').sort(bySeqAttempt)).toEqual([
      { ...delivery(event.throw, 'c-1', 1), reason: 'boom', error: expect.objectContaining({ message: 'boom' }) },
      { ...delivery(event.throw, 'c-1', 2), reason: 'boom', error: expect.objectContaining({ message: 'boom' }) },
      { ...delivery(event.value, 'c-1', 1), reason: valueReason, error: expect.any(RheoError) },
    ]);
    expect(rec.messages('rheo:redelivery').sort(bySeqAttempt)).toEqual([
      delivery(event.throw, 'c-1', 2),
      delivery(event.retry, 'c-1', 2),
      delivery(event.value, 'c-1', 2),
    ]);
    const leases = rec.messages('rheo:lease');
    for (const m of leases) expect(m).toEqual({ stream, group, consumerId: 'c-1', count: expect.any(Number) });
    expect(leases.reduce((n, m) => n + (m.count as number), 0)).toBe(8);
    for (const name of ['rheo:fetch:error', 'rheo:lease:lost', 'rheo:lease:expired', 'rheo:renew:error'])
      expect(rec.messages(name)).toEqual([]);

    // Every event terminal (acked or dead): the next lag read sees the frontier at the end, once.
    await rheo.lag(stream, group);
    await rheo.lag(stream, group);
    expect(rec.messages('rheo:frontier')).toEqual([{ stream, group, partition: 0, frontier: 5, highWatermark: 5 }]);
  });

  it('rheo:lease:lost: a renewal finds the lease taken over by another consumer', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group);
    const [e] = await rheo.appendBatch(stream, [ev('ack')]);
    let started = false;
    // One lease at most: the Consumer does not fetch the expired event back itself.
    const g = startConsumer(
      rheo,
      { stream, group, consumerId: 'A', leaseMs: 200, pollMs: 10, concurrency: 1, maxDemand: 1 },
      untilAborted(() => (started = true)),
    );
    await until('handler started', () => started);
    clock.advance(201);
    const [taken] = await rheo.fetch(stream, group, { consumerId: 'B', leaseMs: 60_000 });
    expect(taken.attempt).toBe(2);
    await until('lease lost', () => rec.messages('rheo:lease:lost').length === 1);
    await until('handler stopped on abort', () => g.running === 0 && g.inflight === 0);
    expect(rec.messages('rheo:lease:lost')).toEqual([
      { ...delivery(e, 'A', 1), reason: `lease on event ${e.id} lost: another consumer holds it now` },
    ]);
    // Not A's to settle; no renewal failed.
    expect(rec.messages('rheo:settle')).toEqual([]);
    expect(rec.messages('rheo:renew:error')).toEqual([]);
    expect(rec.messages('rheo:redelivery')).toEqual([delivery(e, 'B', 2)]);
  });

  it('rheo:renew:error and rheo:lease:expired: renewals fail on a closed backend until the lease expires; then rheo:fetch:error', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group);
    const [e] = await rheo.appendBatch(stream, [ev('ack')]);
    let started = false;
    const g = startConsumer(
      rheo,
      { stream, group, consumerId: 'A', leaseMs: 200, pollMs: 10, concurrency: 1, maxDemand: 1 },
      untilAborted(() => (started = true)),
    );
    await until('handler started', () => started);
    await rheo.close();
    await until('a renewal failed', () => rec.messages('rheo:renew:error').length > 0);
    clock.advance(201);
    await until('the running lease expired', () => rec.messages('rheo:lease:expired').length === 1);
    await until('the freed room fetched and failed', () => rec.messages('rheo:fetch:error').length > 0 && g.inflight === 0);
    expect(await g.drain(1000)).toBe('drained');

    const renewErrors = rec.messages('rheo:renew:error');
    renewErrors.forEach((m, i) =>
      expect(m).toEqual({
        stream,
        group,
        consumerId: 'A',
        code: 'backend_unavailable',
        reason: expect.stringMatching(/closed/),
        leases: 1,
        consecutive: i + 1,
      }),
    );
    // The facade's renew traced the failure too.
    const renewFailed = rec.on('rheo:renew').filter((r) => r.event === 'error');
    expect(renewFailed.length).toBe(renewErrors.length);
    expect((renewFailed[0].message.error as RheoError).code).toBe('backend_unavailable');

    expect(rec.messages('rheo:lease:expired')).toEqual([
      { ...delivery(e, 'A', 1), reason: `lease on event ${e.id} expired: renewals failed, another consumer may hold it now` },
    ]);
    for (const m of rec.messages('rheo:fetch:error')) {
      expect(m).toEqual({ stream, group, consumerId: 'A', code: 'backend_unavailable', reason: expect.stringMatching(/closed/) });
    }
    expect(rec.messages('rheo:lease:lost')).toEqual([]);
    expect(rec.messages('rheo:settle')).toEqual([]); // the ack after the abort failed: nothing was written
    expect(rec.messages('rheo:consumer:stop')).toEqual([{ stream, group, consumerId: 'A', reason: 'drained' }]);
  });

  it('rheo:lease:expired: a buffered lease too close to expiry is given back, then handled', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group);
    const [e1, e2] = await rheo.appendBatch(stream, [ev('ack'), ev('ack')]);
    const hold = gate();
    const handled: Array<[number, number]> = [];
    // Renewals every 30 s of real time: none in this test, so the test clock alone ages the buffered lease.
    const g = startConsumer(
      rheo,
      { stream, group, consumerId: 'A', leaseMs: 60_000, pollMs: 10, concurrency: 1, maxDemand: 2 },
      async (l) => {
        handled.push([l.event.sequence, l.attempt]);
        if (l.event.sequence === 1) await hold.promise;
      },
    );
    await until('one running, one buffered', () => g.running === 1 && g.inflight === 2);
    clock.advance(57_000); // 3 s left, under the 6 s start margin
    hold.open();
    await until('the given-back event handled', () => handled.length === 2 && g.inflight === 0);
    expect(rec.messages('rheo:lease:expired')).toEqual([
      { ...delivery(e2, 'A', 1), reason: `lease on event ${e2.id} too close to expiry to start; given back` },
    ]);
    // Given back with the attempt it had: handled at attempt 1, so no redelivery.
    expect(handled).toEqual([
      [e1.sequence, 1],
      [e2.sequence, 1],
    ]);
    expect(rec.messages('rheo:redelivery')).toEqual([]);
  });

  it('rheo:fetch:error: a Consumer on a group that does not exist reports each failed fetch', async () => {
    await rheo.createStream(stream);
    const g = startConsumer(rheo, { stream, group, consumerId: 'A', pollMs: 10 }, async () => undefined);
    await until('two fetches failed', () => rec.messages('rheo:fetch:error').length >= 2);
    expect(await g.drain(1000)).toBe('drained');
    for (const m of rec.messages('rheo:fetch:error')) {
      expect(m).toEqual({
        stream,
        group,
        consumerId: 'A',
        code: 'group_not_found',
        reason: `group "${group}" does not exist on stream "${stream}"`,
      });
    }
    const failed = rec.on('rheo:fetch').filter((r) => r.event === 'error');
    expect(failed.length).toBeGreaterThanOrEqual(2);
    for (const r of failed) expect(r.message).toMatchObject({ operation: 'fetch', stream, group, consumerId: 'A' });
    expect(rec.messages('rheo:consumer:start')).toEqual([{ stream, group, consumerId: 'A' }]);
    expect(rec.messages('rheo:consumer:stop')).toEqual([{ stream, group, consumerId: 'A', reason: 'drained' }]);
  });

  it('rheo:consumer:stop says timeout when the drain gives up; a Consumer never started announces nothing', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group);
    await rheo.appendBatch(stream, [ev('ack')]);
    let started = false;
    const g = startConsumer(
      rheo,
      { stream, group, consumerId: 'A', leaseMs: 60_000, pollMs: 10 },
      untilAborted(() => (started = true)),
    );
    await until('handler started', () => started);
    expect(await g.drain(20)).toBe('timeout');
    expect(rec.messages('rheo:consumer:stop')).toEqual([{ stream, group, consumerId: 'A', reason: 'timeout' }]);

    rec.clear();
    const idle = new Consumer(rheo, { stream, group, consumerId: 'B' }, async () => undefined);
    expect(await idle.drain()).toBe('drained');
    expect(rec.messages('rheo:consumer:start')).toEqual([]);
    expect(rec.messages('rheo:consumer:stop')).toEqual([]);
  });

  it('rheo:group:paused and rheo:group:resumed around a Consumer that finds its group paused, then claims again', async () => {
    await rheo.createStream(stream);
    await rheo.createGroup(stream, group);
    const pause = await rheo.pauseGroup(stream, group, { reason: 'provider down', by: 'ops' });
    await rheo.appendBatch(stream, [ev('ack')]);
    const handled: string[] = [];
    const g = startConsumer(rheo, { stream, group, consumerId: 'A', leaseMs: 60_000, pollMs: 10 }, async (lease) => {
      handled.push(kindOf(lease));
    });
    await until('the consumer saw the pause', () => g.paused);
    expect(handled).toEqual([]);
    expect(await rheo.resumeGroup(stream, group)).toBe(true);
    await until('the event handled', () => handled.length === 1);
    expect(rec.messages('rheo:group:paused')).toEqual([{ stream, group, pause }]);
    expect(rec.messages('rheo:group:resumed')).toEqual([{ stream, group, wasPaused: true }]);
    expect(rec.messages('rheo:lease')).toHaveLength(1);
  });

  it('fired rheo:process and every plain channel of the runtime in this run', () => {
    expect(seen).toContain('rheo:process');
    // rheo:clock_skew is the store clock's (PostgreSQL, Redis), not the runtime's: test/unit/store-clock.spec.ts;
    // rheo:flow:held needs a backend that enforces flow limits: below.
    for (const name of PLAIN_CHANNEL_NAMES.filter((n) => n !== CHANNELS.clockSkew && n !== CHANNELS.flowHeld)) expect(seen).toContain(name);
  });
});

/** The backends of the list that enforce flow limits (guarantees.flowControl). */
const FLOW_BACKENDS = CLOCKED_BACKENDS.filter(({ make }) => {
  const probe = make(new ManualClock());
  void probe.close();
  return probe.capabilities.guarantees.flowControl;
});

describe.each(FLOW_BACKENDS)('rheo:flow:held on $name', ({ make }) => {
  let rheo: Rheo;
  let rec: ChannelRecorder;
  let stream: string;
  let group: string;

  beforeEach(async () => {
    rheo = new Rheo(make(new ManualClock(Date.UTC(2026, 0, 1))));
    stream = unique('s');
    group = unique('g');
    rec = new ChannelRecorder();
    await rheo.createStream(stream, { partitions: 1 });
  });

  afterEach(async () => {
    await drainAll();
    rec.close();
    await rheo.close();
  });

  const fetch = (consumerId: string, limit = 10) => rheo.fetch(stream, group, { limit, consumerId, leaseMs: 60_000 });

  it("names the group-wide limit that held a fetch back, with the rate window's wait when it allowed none", async () => {
    await rheo.createGroup(stream, group, { groupConcurrency: 3, rateLimit: { max: 5, perMs: 1000 } });
    await rheo.appendBatch(
      stream,
      [1, 2, 3, 4, 5, 6, 7].map((n) => ({ payload: { n } })),
    );
    expect(await fetch('A', 2)).toHaveLength(2);
    expect(rec.messages('rheo:flow:held')).toEqual([]);
    expect(await fetch('A')).toHaveLength(1);
    expect(rec.messages('rheo:flow:held')).toEqual([{ stream, group, consumerId: 'A', limit: 'group_concurrency' }]);
    rec.clear();
    await rheo.updateGroup(stream, group, { groupConcurrency: null });
    expect(await fetch('B')).toHaveLength(2);
    expect(await fetch('B')).toHaveLength(0);
    expect(rec.messages('rheo:flow:held')).toEqual([
      { stream, group, consumerId: 'B', limit: 'rate_limit' },
      // The manual clock stands still: the window frees its first start a whole window from now.
      { stream, group, consumerId: 'B', limit: 'rate_limit', retryInMs: 1000 },
    ]);
  });

  it("counts the events a fetch set waiting for their key, once each: a direct fetch, and a Consumer's under its id", async () => {
    const keyed = ['a', 'a', 'b', 'a', 'b'].map((key) => ({ key, payload: { key } }));
    await rheo.createGroup(stream, group, { ordering: 'key' });
    await rheo.appendBatch(stream, keyed);
    const first = await fetch('A');
    expect(first.map((l) => l.event.key)).toEqual(['a', 'b']);
    expect(rec.messages('rheo:flow:held')).toEqual([{ stream, group, consumerId: 'A', waitingForKey: 3 }]);

    rec.clear();
    group = unique('g');
    await rheo.createGroup(stream, group, { ordering: 'key' });
    const handled: string[] = [];
    const g = startConsumer(rheo, { stream, group, consumerId: 'C', leaseMs: 60_000, pollMs: 10 }, async (lease) => {
      handled.push(lease.event.key!);
    });
    await until('every event handled', () => handled.length === 5);
    await g.drain();
    // The first claim set a's second and third and b's second waiting; the fetches that took them set none.
    expect(rec.messages('rheo:flow:held')).toEqual([{ stream, group, consumerId: 'C', waitingForKey: 3 }]);
  });
});
