// Every delivery ends, on PostgreSQL under a real Consumer (docs/adr/035-every-delivery-ends.md):
// reasons holding U+0000, and settles that fail every time, all end in the dead letters
// after maxAttempts, while the other events of their batches are handled once.
import { Consumer, ManualClock, postgresBackend, Rheo } from '../../lib';
import { FaultyBackend } from '../support/faulty-backend';
import { until } from '../support/until';
import { dropSchema, freshSchema, PG_URL } from './pg-helpers';

const schema = freshSchema('endings');
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const pg = postgresBackend({ url: PG_URL, schema, clock, poolSize: 4 });
const backend = new FaultyBackend(pg);
const rheo = new Rheo(backend);

afterAll(async () => {
  await rheo.close();
  await dropSchema(schema);
});

describe('postgres, under a Consumer: every delivery ends', () => {
  it('NUL reasons and settles that always fail reach the dead letters after maxAttempts; the rest is handled once; lag 0', async () => {
    const maxAttempts = 2;
    const leaseMs = 1000;
    await rheo.createStream('s');
    await rheo.createGroup('s', 'g', { maxAttempts, retry: { initialMs: 0, maxMs: 0 } });
    const roles = ['good', 'reject-nul', 'good', 'throw-nul', 'good', 'ack-fails', 'settle-fails', 'good', 'settle-call-fails', 'good'];
    const evs = await rheo.appendBatch(
      's',
      roles.map((role, i) => ({ type: role, payload: { i } })),
    );
    const roleOf = new Map(evs.map((e, i) => [e.id, roles[i]]));
    const ofRole = (role: string) => evs.filter((e) => roleOf.get(e.id) === role);
    // Every ack of this event answers a definite error (the nacks that follow go through) ...
    for (const e of ofRole('ack-fails')) {
      backend.failSettle({ kind: 'ack', eventId: e.id, code: 'failed', applied: false, times: Number.POSITIVE_INFINITY });
    }
    // ... every settle of this one ...
    for (const e of ofRole('settle-fails')) {
      backend.failSettle({ eventId: e.id, code: 'failed', applied: false, times: Number.POSITIVE_INFINITY });
    }
    // ... and every settle call carrying this one fails whole, as one statement broken by one op does.
    for (const e of ofRole('settle-call-fails')) backend.failSettleCall({ code: 'failed', eventId: e.id });

    const handled = new Map<string, number[]>();
    const g = new Consumer(rheo, { stream: 's', group: 'g', leaseMs, pollMs: 5, concurrency: 16, maxDemand: 32 }, async (lease) => {
      handled.set(lease.event.id, [...(handled.get(lease.event.id) ?? []), lease.attempt]);
      switch (roleOf.get(lease.event.id)) {
        case 'reject-nul':
          return { kind: 'reject', reason: 'bad \u0000 value' };
        case 'throw-nul':
          // What JSON.parse says about a payload holding the character.
          JSON.parse('{"a":\u0000}');
      }
    });
    g.start();
    try {
      const goods = ofRole('good');
      const acked = () => new Set(backend.settles.filter((s) => s.kind === 'ack' && s.answered === 'ok').map((s) => s.eventId));
      await until('the good events acked', () => goods.every((e) => acked().has(e.id)), 20_000, 5);
      // The leases left to expire expire, on the manual clock, only while the Consumer holds nothing.
      await until(
        'lag 0',
        async () => {
          if (g.inflight === 0) clock.advance(leaseMs);
          return (await rheo.lag('s', 'g')).lag === 0;
        },
        20_000,
        20,
      );

      const dead = new Map((await rheo.deadLetters('s', 'g')).map((d) => [d.eventId, d]));
      const bad = evs.filter((e) => roleOf.get(e.id) !== 'good');
      expect([...dead.keys()].sort()).toEqual(bad.map((e) => e.id).sort());
      for (const e of goods) expect(handled.get(e.id)).toEqual([1]);
      const reasonOf = (role: string) => ofRole(role).map((e) => [dead.get(e.id)!.attempt, dead.get(e.id)!.reason]);
      expect(reasonOf('reject-nul')).toEqual([[1, 'bad \uFFFD value']]);
      expect(handled.get(ofRole('throw-nul')[0].id)).toEqual([1, 2]);
      expect(reasonOf('throw-nul')).toEqual([[maxAttempts, expect.stringContaining('\uFFFD')]]);
      expect(reasonOf('ack-fails')).toEqual([
        [maxAttempts, expect.stringMatching(/^settle failed: failed: injected fault: ack answered failed/)],
      ]);
      expect(reasonOf('settle-fails')).toEqual([[maxAttempts, `lease expired on attempt ${maxAttempts} of ${maxAttempts}`]]);
      expect(reasonOf('settle-call-fails')).toEqual([[maxAttempts, `lease expired on attempt ${maxAttempts} of ${maxAttempts}`]]);
      for (const role of ['ack-fails', 'settle-fails', 'settle-call-fails']) expect(handled.get(ofRole(role)[0].id)).toEqual([1, 2]);
      for (const d of dead.values()) expect(d.reason.isWellFormed() && !d.reason.includes('\u0000')).toBe(true);
      expect(await rheo.groupInfo('s', 'g')).toMatchObject({ inflight: 0, deadLetters: bad.length, lag: { lag: 0 } });
    } finally {
      await g.drain(2000);
    }
  });
});
