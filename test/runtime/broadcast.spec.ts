// Broadcast membership on the memory backend with a ManualClock: heartbeats and
// collections are run by hand (manual: true), so every interleaving below is
// exact. The same membership across processes, on PostgreSQL and Redis, is in
// test/sql/postgres.broadcast.spec.ts and test/redis/broadcast.spec.ts.
import { ManualClock, Rheo, RheoError } from '../../lib';
import { BroadcastMember } from '../../lib/runtime/broadcast';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import type { BroadcastEvents } from '../../lib/runtime/broadcast';
import { raceLiveMember } from '../support/broadcast-race';

const TTL = 3000;

async function setup() {
  const clock = new ManualClock();
  const rheo = new Rheo(new MemoryBackend({ clock }));
  await rheo.createStream('s', { partitions: 2 });
  const member = (events?: BroadcastEvents, group = 'cache') =>
    new BroadcastMember(rheo, { stream: 's', group, ttlMs: TTL, manual: true, events });
  const groups = async () => (await rheo.listGroups('s')).map((g) => g.group).sort();
  return { clock, rheo, member, groups };
}

function field(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof RheoError) return err.field;
    throw err;
  }
  return undefined;
}

describe('BroadcastMember', () => {
  it('gives each instance its own group at the end of the stream: every member gets every later event', async () => {
    const { rheo, member, groups } = await setup();
    await rheo.append('s', { key: 'before', payload: 0 });
    const a = member();
    const b = member();
    await a.join();
    await b.join();
    expect(a.group).toMatch(/^cache\.[0-9a-f]{16}$/);
    expect(a.group).not.toBe(b.group);
    expect(await groups()).toEqual([a.group, b.group].sort());
    const appended = await rheo.appendBatch('s', [
      { key: 'x', payload: 1 },
      { key: 'y', payload: 2 },
    ]);
    for (const m of [a, b]) {
      const got = await rheo.fetch('s', m.group, { limit: 10 });
      expect(got.map((l) => l.event.id).sort()).toEqual(appended.map((e) => e.id).sort());
    }
  });

  it('leaves nothing when it leaves: no group, and its heartbeat job is free', async () => {
    const { rheo, member, groups } = await setup();
    const a = member();
    await a.join();
    await rheo.append('s', { payload: 1 });
    const [lease] = await rheo.fetch('s', a.group, { limit: 1 });
    await rheo.reject(lease, { reason: 'dead letter to be removed too' });
    await a.leave();
    await a.leave();
    expect(await groups()).toEqual([]);
    // Free at once, for anyone: the turn was forgotten, not left to expire.
    expect(await rheo.backend.releaseTurn(BroadcastMember.jobOf('s', a.group), a.instanceId)).toBe(false);
    expect(await rheo.backend.claimTurn(BroadcastMember.jobOf('s', a.group), 'someone', TTL)).toBe(true);
  });

  it("collects a crashed instance's group only once its heartbeat is ttlMs old", async () => {
    const { clock, rheo, member, groups } = await setup();
    const collected: string[] = [];
    const crashed = member();
    const survivor = member({ collected: (g) => collected.push(g) });
    await crashed.join();
    await survivor.join();
    // The crashed instance never beats again; the survivor keeps beating.
    clock.advance(TTL - 1);
    await survivor.beat();
    expect(await survivor.collect()).toEqual([]);
    expect(await groups()).toContain(crashed.group);
    clock.advance(1);
    await survivor.beat();
    expect(await survivor.collect()).toEqual([crashed.group]);
    expect(collected).toEqual([crashed.group]);
    expect(await groups()).toEqual([survivor.group]);
    // The collector gave the dead job up: nothing of it is left held.
    expect(await rheo.backend.claimTurn(BroadcastMember.jobOf('s', crashed.group), 'someone', TTL)).toBe(true);
  });

  it('collects at join what crashed instances left', async () => {
    const { clock, member, groups } = await setup();
    const crashed = member();
    await crashed.join();
    clock.advance(TTL);
    const next = member();
    await next.join();
    expect(await groups()).toEqual([next.group]);
  });

  it('never takes the group of a member that keeps beating, whoever collects and however they interleave', async () => {
    const { clock, rheo } = await setup();
    expect(new Set(await raceLiveMember([rheo, rheo, rheo, rheo], clock, 's'))).toEqual(new Set(['held']));
  });

  it('creates its group again at the end when it stalled past the ttl and was collected, and says so', async () => {
    const { clock, rheo, member, groups } = await setup();
    const rejoined: string[] = [];
    const stalled = member({ rejoined: (g) => rejoined.push(g) });
    const other = member();
    await stalled.join();
    await other.join();
    clock.advance(TTL);
    await other.beat();
    expect(await other.collect()).toEqual([stalled.group]);
    await rheo.append('s', { payload: 'missed while gone' });
    expect(await stalled.beat()).toBe('rejoined');
    expect(rejoined).toEqual([stalled.group]);
    expect(await groups()).toContain(stalled.group);
    // At the end: what was appended while it was gone is not redelivered; what comes next is.
    expect(await rheo.fetch('s', stalled.group, { limit: 10 })).toEqual([]);
    const later = await rheo.append('s', { payload: 'after' });
    expect((await rheo.fetch('s', stalled.group, { limit: 10 })).map((l) => l.event.id)).toEqual([later.id]);
    expect(await stalled.beat()).toBe('held');
  });

  it("keeps its group when a collector took its turn and died before deleting: 'lost' until the turn lapses, then held", async () => {
    const { clock, rheo, member } = await setup();
    const stalled = member();
    await stalled.join();
    clock.advance(TTL);
    // A collector claims the lapsed job, then dies before it deletes anything.
    expect(await rheo.backend.claimTurn(BroadcastMember.jobOf('s', stalled.group), 'dead-collector', TTL)).toBe(true);
    expect(await stalled.beat()).toBe('lost');
    clock.advance(TTL);
    expect(await stalled.beat()).toBe('held');
    expect(await rheo.backend.getGroup('s', stalled.group)).not.toBeNull();
  });

  it('collects only its own members: other groups, and names that only look alike, are never touched', async () => {
    const { clock, rheo, member, groups } = await setup();
    const others = [
      'cache',
      'cache.v2',
      'cache.0123456789abcdeF',
      'cache.0123456789abcdef0',
      'cachex.0123456789abcdef',
      'other.0123456789abcdef',
    ];
    for (const g of others) await rheo.createGroup('s', g);
    const a = member();
    await a.join();
    clock.advance(10 * TTL);
    await a.beat();
    expect(await a.collect()).toEqual([]);
    expect(await groups()).toEqual([...others, a.group].sort());
    // A member group of another broadcast group is that group's to collect.
    const b = member(undefined, 'other');
    await b.join();
    expect(await groups()).not.toContain('other.0123456789abcdef');
  });

  it('leaves nothing behind when it cannot join, and says why', async () => {
    const { rheo } = await setup();
    const lost = new BroadcastMember(rheo, { stream: 'no-such-stream', group: 'cache', ttlMs: TTL, manual: true });
    await expect(lost.join()).rejects.toMatchObject({ code: 'stream_not_found' });
    // Its heartbeat was given up at once: another holder takes the job without waiting for it to lapse.
    expect(await rheo.backend.claimTurn(BroadcastMember.jobOf('no-such-stream', lost.group), 'someone', TTL)).toBe(true);
    await lost.leave();
  });

  it('refuses bad options naming the field, before touching anything', async () => {
    const { rheo } = await setup();
    const make = (o: object) => () => new BroadcastMember(rheo, { stream: 's', group: 'cache', ...o });
    expect(field(make({ group: 'g'.repeat(184) }))).toBe('group');
    expect(() => make({ group: 'g'.repeat(183) })()).not.toThrow();
    expect(field(make({ ttlMs: 99 }))).toBe('ttlMs');
    expect(field(make({ ttlMs: 1.5 }))).toBe('ttlMs');
    expect(field(make({ stream: '' }))).toBe('stream');
    expect(await rheo.listGroups('s')).toEqual([]);
  });
});
