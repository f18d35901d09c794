// Batch handlers on the memory backend behind the fault wrapper (issue 13, ADR
// 029): the edges that need a fault or the ManualClock. The SQL backends run
// the everyday cases in test/sql/batch.spec.ts.
import { type BatchControl, type Lease, type Outcome, RheoError, RheoReject } from '../../lib';
import type { HandlerErrorEvent } from '../../lib/runtime/consumer-types';
import { SettleBatcher } from '../../lib/runtime/settle-batcher';
import { drainAll, events, gate, setup, startBatchConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

const ids = (leases: readonly Lease[]) => leases.map((l) => l.event.id);

describe('Consumer batch mode: leases, timeouts, ordering', () => {
  it('settles a batch whose lease was lost mid-batch without that lease; the signal aborts only when every lease is lost', async () => {
    const { rheo, stream, group, backend } = await setup();
    const [a, b, c] = await rheo.appendBatch(stream, events(3));
    backend.loseOnRenew(b.id, 1);
    const hold = gate();
    let signal: AbortSignal | null = null;
    const g = startBatchConsumer(
      rheo,
      { stream, group, leaseMs: 100, pollMs: 10, batch: { size: 3, maxWaitMs: 0 } },
      async (leases, ctl) => {
        signal = ctl.signal;
        ctl.reject(leases[1], 'decided, but the lease is gone');
        await hold.promise;
      },
    );
    const lost: Lease[] = [];
    g.on('lease_lost', (l) => lost.push(l));
    await until('one lease lost', () => lost.length === 1);
    expect(lost[0].event.id).toBe(b.id);
    expect(signal!.aborted).toBe(false); // two leases of the batch are still worth finishing
    hold.open();
    await until('the batch settled', () => backend.settles.length === 2);
    expect(backend.settles.map((s) => [s.kind, s.eventId])).toEqual([
      ['ack', a.id],
      ['ack', c.id],
    ]);
    expect(backend.calls.settle).toBe(1);
  });

  it('aborts the batch signal once every lease of the batch is lost, and settles nothing', async () => {
    const { rheo, stream, group, backend } = await setup();
    const evs = await rheo.appendBatch(stream, events(2));
    for (const e of evs) backend.loseOnRenew(e.id, 1);
    let reason: unknown = null;
    startBatchConsumer(rheo, { stream, group, leaseMs: 100, pollMs: 10, batch: { size: 2, maxWaitMs: 0 } }, async (_leases, ctl) => {
      await new Promise<void>((resolve) => ctl.signal.addEventListener('abort', () => resolve()));
      reason = ctl.signal.reason;
    });
    await until('signal aborted', () => reason !== null);
    expect((reason as RheoError).code).toBe('stale_lease');
    expect(backend.settles).toEqual([]);
  });

  it('the timeout covers the whole batch: outcomes given before it stand, the rest are settled by onTimeout, later calls throw', async () => {
    const { rheo, stream, group, backend } = await setup();
    const [a, b, c] = await rheo.appendBatch(stream, events(3));
    const stuck = gate();
    let control: BatchControl | null = null;
    const g = startBatchConsumer(
      rheo,
      { stream, group, leaseMs: 60_000, pollMs: 10, timeoutMs: 30, batch: { size: 3, maxWaitMs: 0 } },
      async (leases, ctl) => {
        control = ctl;
        ctl.ack(leases[0]);
        ctl.retry(leases[1].event, { delayMs: 5000, reason: 'later' });
        await stuck.promise; // ignores its signal
      },
    );
    await until('settled at the timeout', () => backend.settles.length === 3);
    expect(backend.settles.map((s) => [s.kind, s.eventId, s.reason, s.delayMs])).toEqual([
      ['ack', a.id, undefined, undefined],
      ['nack', b.id, 'later', 5000],
      ['nack', c.id, 'timeout after 30 ms', undefined],
    ]);
    expect(backend.calls.settle).toBe(1);
    expect(control!.signal.aborted).toBe(true);
    expect(() => control!.reject(c.id as never, 'x')).toThrow(RheoError);
    expect(() => control!.ack({ id: c.id } as never)).toThrow(/already settled/);
    expect(g.stats.timeouts).toBe(1);
    expect(g.overdue).toBe(1);
    stuck.open();
    await until('late result counted once for the batch', () => g.stats.lateResults === 1);
    expect(backend.settles).toHaveLength(3);
  });

  it('with ordering partition each batch holds at most one lease per partition, and per-key order holds', async () => {
    const { rheo, stream, group } = await setup({ partitions: 3, group: { ordering: 'partition' } });
    await rheo.appendBatch(stream, events(30, true));
    const order = new Map<number, number[]>();
    let widest = 0;
    let shared = false;
    startBatchConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 10, batch: { size: 10, maxWaitMs: 5 } }, async (leases) => {
      const parts = leases.map((l) => l.event.partition);
      if (new Set(parts).size !== parts.length) shared = true;
      widest = Math.max(widest, leases.length);
      for (const l of leases) order.set(l.event.partition, [...(order.get(l.event.partition) ?? []), l.event.sequence]);
    });
    await until('all consumed', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(shared).toBe(false);
    expect(widest).toBeLessThanOrEqual(3);
    for (const seqs of order.values()) expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect([...order.values()].flat()).toHaveLength(30);
  });

  it('gives back at a drain the leases waiting for a batch to fill', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(4));
    const handled: string[][] = [];
    const g = startBatchConsumer(
      rheo,
      { stream, group, leaseMs: 60_000, pollMs: 10, batch: { size: 10, maxWaitMs: 60_000 } },
      async (leases) => {
        handled.push(ids(leases));
      },
    );
    await until('leases held, waiting for more', () => g.inflight === 4);
    expect(await g.drain(1000)).toBe('drained');
    expect(handled).toEqual([]);
    expect(backend.released).toHaveLength(4);
    expect(g.stats.released).toBe(4);
    expect((await rheo.groupInfo(stream, group)).inflight).toBe(0);
  });

  it('renews the leases of a running batch past their first expiry', async () => {
    const { rheo, stream, group, clock } = await setup();
    await rheo.appendBatch(stream, events(5));
    const hold = gate();
    let outcome: Outcome[] = [];
    const g = startBatchConsumer(rheo, { stream, group, leaseMs: 200, pollMs: 10, batch: { size: 5, maxWaitMs: 0 } }, () => hold.promise);
    g.on('settled', (s) => (outcome = [...outcome, s.outcome]));
    await until('batch running', () => g.running === 1);
    const rounds = g.stats.renewRounds;
    clock.advance(150);
    await until('renewed after the clock moved', () => g.stats.renewRounds >= rounds + 2);
    clock.advance(150); // past the first expiry (t0 + 200): only the renewals keep the leases
    hold.open();
    await until('the batch settled', () => outcome.length === 5);
    expect(outcome.every((o) => o.kind === 'ack')).toBe(true);
    expect((await rheo.lag(stream, group)).lag).toBe(0);
  });

  it('refuses bad per-event input with a RheoError naming the field, and changes nothing', async () => {
    const { rheo, stream, group, backend } = await setup();
    const [a] = await rheo.appendBatch(stream, events(1));
    const problems: Array<[string | undefined, string]> = [];
    startBatchConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 10, batch: { size: 1, maxWaitMs: 0 } }, async (leases, ctl) => {
      const tries: Array<() => void> = [
        () => ctl.reject({ id: 'not-in-this-batch' } as never, 'x'),
        () => ctl.ack(null as never),
        () => ctl.reject(leases[0], 42 as never),
        () => ctl.retry(leases[0], { delayMs: -1 }),
        () => ctl.retry(leases[0], { reason: 7 as never }),
        () => ctl.retry(leases[0], { delay: 5 } as never),
      ];
      for (const t of tries) {
        try {
          t();
        } catch (err) {
          problems.push([(err as RheoError).field, (err as RheoError).code]);
        }
      }
    });
    await until('settled', () => backend.settles.length === 1);
    expect(problems).toEqual([
      ['event', 'invalid_argument'],
      ['event', 'invalid_argument'],
      ['reason', 'invalid_argument'],
      ['options.delayMs', 'invalid_argument'],
      ['options.reason', 'invalid_argument'],
      ['options.delay', 'invalid_argument'],
    ]);
    expect(backend.settles.map((s) => [s.kind, s.eventId])).toEqual([['ack', a.id]]);
  });

  it('RheoReject dead-letters the whole batch and is no handler_error; another throw is reported once, with every lease', async () => {
    const { rheo, stream, group, clock } = await setup();
    await rheo.appendBatch(stream, events(3));
    const g = startBatchConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 10, batch: { size: 3, maxWaitMs: 0 } }, async (leases) => {
      if (leases[0].attempt === 1) throw new Error('store down');
      throw new RheoReject('bad batch');
    });
    const errors: HandlerErrorEvent[] = [];
    g.on('handler_error', (e) => errors.push(e));
    await until('first attempt failed', () => errors.length === 1);
    expect(errors[0].leases).toHaveLength(3);
    expect((errors[0].error as Error).message).toBe('store down');
    clock.advance(1000); // the group's first backoff step
    await until('all dead-lettered', async () => (await rheo.countDeadLetters(stream, group)) === 3);
    expect(errors).toHaveLength(1); // a RheoReject is a decision, not a failure
    expect((await rheo.deadLetters(stream, group)).map((d) => [d.reason, d.attempt])).toEqual([
      ['bad batch', 2],
      ['bad batch', 2],
      ['bad batch', 2],
    ]);
  });
});

describe('SettleBatcher.settleAll', () => {
  it('sends each batch in one call of its own, at once; single settles keep coalescing', async () => {
    const calls: number[] = [];
    const batcher = new SettleBatcher(
      async (requests) => {
        calls.push(requests.length);
        return requests.map(() => ({ ok: true as const }));
      },
      5,
      () => undefined,
    );
    const done = () => undefined;
    const req = {} as never;
    for (let i = 0; i < 3; i++) batcher.settle(req, done);
    batcher.settleAll(Array.from({ length: 4 }, () => ({ request: req, done })));
    batcher.settleAll(Array.from({ length: 5 }, () => ({ request: req, done })));
    await until('all sent', () => batcher.idle);
    expect(calls).toEqual([4, 5, 3]);
  });
});
