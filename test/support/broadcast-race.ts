// The race a broadcast group must win, on any backend: a member that keeps
// beating while several collectors (each on its own facade, as separate
// processes would be) sweep at every step never loses its group, and a member
// that stopped beating is collected. The clock is a ManualClock shared by every
// facade's backend, so the steps are exact; the collectors' and the beat's store
// calls run concurrently at each step.
import { type ManualClock, type Rheo } from '../../lib';
import { BroadcastMember } from '../../lib/runtime/broadcast';

/**
 * `rheos[0]` runs the live member; each other facade runs a collector (the first
 * also runs a member that crashes). The stream must exist. Returns what the live
 * member's heartbeats answered.
 */
export async function raceLiveMember(rheos: Rheo[], clock: ManualClock, stream: string, ttlMs = 3000): Promise<string[]> {
  const member = (rheo: Rheo) => new BroadcastMember(rheo, { stream, group: 'race', ttlMs, manual: true });
  const [own, ...others] = rheos;
  const live = member(own);
  await live.join();
  const collectors = others.map(member);
  for (const c of collectors) await c.join();
  const crashed = member(others[0]);
  await crashed.join();
  const beats: string[] = [];
  // Six ttls in steps of a tenth: the live member beats every third of the ttl, as its timer does,
  // at the same moment as every collector beats and sweeps.
  for (let step = 1; step <= 60; step++) {
    clock.advance(ttlMs / 10);
    const sweeps = collectors.map(async (c) => {
      await c.beat();
      return c.collect();
    });
    const beat = step % 3 === 0 ? live.beat().then((r) => void beats.push(r)) : Promise.resolve();
    const [swept] = await Promise.all([Promise.all(sweeps), beat]);
    expect(swept.flat()).not.toContain(live.group);
    // Read by another facade than the member's: what the store holds, not what a cache remembers.
    expect(await others[0].backend.getGroup(stream, live.group)).not.toBeNull();
  }
  expect(await own.backend.getGroup(stream, crashed.group)).toBeNull();
  for (const m of [live, ...collectors]) await m.leave();
  expect((await own.listGroups(stream)).map((g) => g.group)).toEqual([]);
  return beats;
}
