// The multi-process broadcast scenario, run against every distributed backend:
// two instances of a Nest app (broadcast-child.ts), each with its own
// connections, consume one broadcast group while the parent appends. Both must
// get every event appended after they started; an instance that shuts down
// removes its group; one that is SIGKILLed has its group deleted by the survivor
// once its heartbeat is broadcastTtlMs old. "Removed" is checked in the store
// itself: no group, delivery, dead letter, position or heartbeat left.
import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { Rheo } from '../../lib';
import { ManualClock } from '../../lib';
import { BroadcastMember } from '../../lib/runtime/broadcast';
import { raceLiveMember } from './broadcast-race';
import { until } from './until';
import { BACKEND_ENV } from './backend-from-env';
import type { BroadcastChildConfig, BroadcastChildMessage } from './broadcast-child';

export interface BroadcastTarget {
  /** Label used in describe(). */
  name: string;
  /** How a child builds the backend (a backend-from-env entry and JSON options). */
  backend: { name: string; options: Record<string, unknown> };
  /** The parent's own facade on the same store. */
  rheo: Rheo;
  /** Another facade on the same store, on connections of its own, reading `clock` (the race of collectors). */
  racer(clock: ManualClock): Rheo;
  /** What the store still holds of `group` of `stream` and of the heartbeat job `job`, by kind (rows, keys). */
  leftovers(stream: string, group: string, job: string): Promise<Record<string, number>>;
  /** Drop the store's test data after the facade closed. */
  cleanup(): Promise<unknown>;
}

/** A broadcast instance running in a child process. */
interface Instance {
  process: ChildProcess;
  /** The group it joined as. */
  group: string;
  /** Ids of the events it handled. */
  got: Set<string>;
  exited: Promise<unknown>;
  bye: Promise<void>;
}

const TTL_MS = 1500;

async function startInstance(target: BroadcastTarget, config: BroadcastChildConfig): Promise<Instance> {
  const proc = fork(join(__dirname, 'broadcast-child.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: {
      ...process.env,
      [BACKEND_ENV.name]: target.backend.name,
      [BACKEND_ENV.options]: JSON.stringify(target.backend.options),
      RHEO_TEST_BROADCAST: JSON.stringify(config),
      TS_NODE_TRANSPILE_ONLY: 'true',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const got = new Set<string>();
  let said!: () => void;
  const bye = new Promise<void>((resolve) => (said = resolve));
  const exited = new Promise((resolve) => proc.on('close', resolve));
  const group = await new Promise<string>((resolve, reject) => {
    proc.on('message', (m: BroadcastChildMessage) => {
      if (m.k === 'ready') resolve(m.group);
      else if (m.k === 'got') got.add(m.id);
      else if (m.k === 'bye') said();
    });
    proc.on('exit', (code) => reject(new Error(`broadcast child exited with ${code} before it was ready`)));
  });
  return { process: proc, group, got, exited, bye };
}

async function stop(i: Instance): Promise<void> {
  if (i.process.exitCode !== null || i.process.signalCode !== null) return;
  i.process.send({ type: 'stop' });
  await Promise.race([i.bye, i.exited]);
  await i.exited;
}

export function runBroadcastSuite(target: BroadcastTarget): void {
  const { rheo } = target;
  const instances: Instance[] = [];

  // First, so the suite's cleanup (registered below) removes the store's data after it.
  describe(`${target.name}: a broadcast member that keeps beating never loses its group`, () => {
    it('to collectors on their own connections, sweeping at every step', async () => {
      const clock = new ManualClock();
      const rheos = Array.from({ length: 4 }, () => target.racer(clock));
      try {
        await rheos[0].createStream('bc-race');
        expect(new Set(await raceLiveMember(rheos, clock, 'bc-race'))).toEqual(new Set(['held']));
      } finally {
        for (const r of rheos) await r.close();
      }
    }, 120_000);
  });

  describe(`${target.name}: broadcast consumers in several processes`, () => {
    beforeAll(() => rheo.init());
    afterEach(async () => {
      await Promise.all(instances.splice(0).map(stop));
    });
    afterAll(async () => {
      await rheo.close();
      await target.cleanup();
    });

    const groupsOf = async (stream: string) => (await rheo.listGroups(stream)).map((g) => g.group).sort();
    const appendSome = async (stream: string, n: number) =>
      (
        await rheo.appendBatch(
          stream,
          Array.from({ length: n }, (_, i) => ({ key: `k${i}`, payload: { n: i } })),
        )
      ).map((e) => e.id);
    /** A dead letter and a lease held to the end in each instance's group, so deleting a group has something to delete. */
    const appendTroubles = async (stream: string) =>
      (await rheo.appendBatch(stream, [{ payload: { reject: true } }, { payload: { hang: true } }])).map((e) => e.id);
    const nothingLeft = async (stream: string, group: string) => {
      const left = await target.leftovers(stream, group, BroadcastMember.jobOf(stream, group));
      expect(Object.values(left).every((n) => n === 0) ? {} : left).toEqual({});
    };
    const start = async (stream: string) => {
      const i = await startInstance(target, { stream, group: 'cache', ttlMs: TTL_MS });
      instances.push(i);
      return i;
    };

    it('every instance gets every event appended after it started; one that shuts down removes its group', async () => {
      const stream = 'bc-graceful';
      await rheo.createStream(stream, { partitions: 2 });
      const [before] = await appendSome(stream, 1);
      const a = await start(stream);
      const b = await start(stream);
      expect(a.group).toMatch(/^cache\.[0-9a-f]{16}$/);
      expect(await groupsOf(stream)).toEqual([a.group, b.group].sort());

      const ids = [...(await appendSome(stream, 60)), ...(await appendTroubles(stream))];
      for (const i of [a, b])
        await until(`${i.group} to get all ${ids.length} events`, async () => ids.every((id) => i.got.has(id)), 60_000, 50);
      expect(a.got.has(before)).toBe(false);
      // Each instance's group holds its dead letter and its hung lease now.
      for (const i of [a, b]) {
        await until(
          `${i.group} to hold its dead letter and hung lease`,
          async () => {
            const info = await rheo.groupInfo(stream, i.group);
            return info.deadLetters === 1 && info.inflight === 1;
          },
          60_000,
          50,
        );
      }

      // The probe sees every kind of thing the group holds while it lives (so "none left" below means something).
      const held = await target.leftovers(stream, a.group, BroadcastMember.jobOf(stream, a.group));
      expect(Object.entries(held).filter(([, n]) => n === 0)).toEqual([]);

      await stop(a);
      expect(await groupsOf(stream)).toEqual([b.group]);
      await nothingLeft(stream, a.group);
      // The other instance goes on receiving.
      const later = await appendSome(stream, 5);
      await until('the remaining instance to get the later events', async () => later.every((id) => b.got.has(id)), 60_000, 50);
      expect(later.some((id) => a.got.has(id))).toBe(false);

      await stop(b);
      expect(await groupsOf(stream)).toEqual([]);
      await nothingLeft(stream, b.group);
    }, 180_000);

    it("deletes a SIGKILLed instance's group once its heartbeat is broadcastTtlMs old, and never the live one's", async () => {
      const stream = 'bc-killed';
      await rheo.createStream(stream, { partitions: 2 });
      const killed = await start(stream);
      const survivor = await start(stream);
      const first = [...(await appendSome(stream, 20)), ...(await appendTroubles(stream))];
      for (const i of [killed, survivor])
        await until(`${i.group} to get the first events`, async () => first.every((id) => i.got.has(id)), 60_000, 50);

      killed.process.kill('SIGKILL');
      await killed.exited;
      // Events keep coming while the survivor collects; its own group is there at every look.
      const meanwhile: string[] = [];
      await until(
        `the group of the killed instance (${killed.group}) to be collected`,
        async () => {
          meanwhile.push(...(await appendSome(stream, 2)));
          const groups = await groupsOf(stream);
          expect(groups).toContain(survivor.group);
          return !groups.includes(killed.group);
        },
        60_000,
      );
      await nothingLeft(stream, killed.group);
      await until('the survivor to get every event', async () => [...first, ...meanwhile].every((id) => survivor.got.has(id)), 60_000, 50);
      expect(await groupsOf(stream)).toEqual([survivor.group]);

      await stop(survivor);
      expect(await groupsOf(stream)).toEqual([]);
      await nothingLeft(stream, survivor.group);
    }, 180_000);
  });
}
