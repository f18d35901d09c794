// What every "bad input is refused and changes nothing" test needs: a facade on
// the real memory backend with something in it, everything a caller can observe
// of it, and the refusal check itself.
import type { Lease, RheoErrorCode } from '../../lib';
import { ManualClock, Rheo, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';

/** A facade on a memory backend: stream `s` of `partitions`, group `g`, one event on each of partitions 0 and 1, the first of them leased. */
export async function leasedRheo(partitions: number, clock = new ManualClock()): Promise<{ rheo: Rheo; lease: Lease }> {
  const rheo = new Rheo(new MemoryBackend({ clock }));
  await rheo.createStream('s', { partitions });
  await rheo.createGroup('s', 'g');
  await rheo.appendBatch('s', [
    { partition: 0, payload: { n: 1 } },
    { partition: 1, payload: { n: 2 } },
  ]);
  const [lease] = await rheo.fetch('s', 'g', { limit: 1, leaseMs: 10_000 });
  return { rheo, lease };
}

/** Everything a caller can observe of stream `s` and group `g`. */
export async function observe(rheo: Rheo): Promise<unknown> {
  return {
    streams: await rheo.listStreams(),
    groups: await rheo.listGroups('s'),
    info: await rheo.groupInfo('s', 'g'),
    log: await rheo.query({ stream: 's', limit: 1000 }),
    dead: await rheo.deadLetters('s', 'g'),
  };
}

/** `call` fails with a RheoError of `code` naming `field`, and nothing observable changed; returns the error. */
export async function expectRefused(rheo: Rheo, call: () => Promise<unknown>, code: RheoErrorCode, field: string): Promise<RheoError> {
  const before = await observe(rheo);
  let caught: unknown;
  try {
    await call();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RheoError);
  const e = caught as RheoError;
  expect({ code: e.code, field: e.field }).toEqual({ code, field });
  expect(await observe(rheo)).toEqual(before);
  return e;
}
