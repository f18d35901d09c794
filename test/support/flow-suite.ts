// Flow control across processes (docs/adr/049-flow-control.md), run against every
// backend that declares guarantees.flowControl: three consumer processes
// (flow-child.ts: a runtime Consumer, concurrency 16) share one group of a stream of
// 4 partitions and 200 keys, while the parent SIGKILLs one of them every second (one
// that is up, while another is up) and starts another in its place. Each handler run writes a start and an end row to
// the checker's own log (flow-log.ts, outside the library), with its lease's claim
// time and expiry; the parent keeps the time each killed process was seen dead.
// Then flow-check.ts judges:
//   ordering 'key'         no per-key order inversion, no two handlers of a key at
//                          once (but beside a killed holder whose lease had expired),
//                          nothing lost;
//   groupConcurrency 8     never more than 8 handlers running across the processes
//                          (a killed holder counted until its lease expired);
//   rateLimit 200 / 1 s    no span of 1 s of the store's claim clock (the leases'
//                          leasedAt: a delivery starts when it is claimed) with more
//                          than 200 claims; the handlers' own start windows are
//                          printed, for information; nothing lost.
// Sizes: the acceptance run is 20,000 events per scenario (RHEO_FLOW_FULL=1: minutes
// per backend, the rate limit alone 100 s); by default (CI) 2,000 events (10 per key)
// under ordering 'key', 1,000 under groupConcurrency and under the rate limit (5 s at
// 200/s), the kills every second either way: each kill leaves its leases to expire
// (2 s), and under groupConcurrency those hold the group's places meanwhile, so the
// kills, not the events, set the pace.
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { Backend, GroupOptions, Rheo } from '../../lib';
import { Rheo as RheoFacade } from '../../lib';
import { BACKEND_ENV } from './backend-from-env';
import {
  busiestWindow,
  claimsIn,
  claimTimes,
  type Death,
  keyOverlaps,
  lostEvents,
  mostRunning,
  orderInversions,
  type Run,
  runsOf,
} from './flow-check';
import { type FlowChildConfig, type FlowChildMessage, flowConsumer } from './flow-child';
import { type FlowLog, type FlowLogSpec, openFlowLog } from './flow-log';
import { until } from './until';

export interface FlowTarget {
  /** Label used in describe(). */
  name: string;
  /**
   * How the consumers run: forked processes that build the backend from its
   * backend-from-env entry, or (a store that lives in one process) consumers in
   * this process on `backend`, a kill cutting one off the store mid-call.
   */
  processes: { kind: 'fork'; backend: { name: string; options: Record<string, unknown> } } | { kind: 'in-process'; backend: Backend };
  /** The parent's own facade on the same store. */
  rheo: Rheo;
  /** Where a scenario's handler runs are written. */
  log(scenario: string): FlowLogSpec;
  /** Time between kills; default 1000 ms. */
  killEveryMs?: number;
  /** Drop the store's test data after the facade closed. */
  cleanup(): Promise<unknown>;
}

const FULL = process.env.RHEO_FLOW_FULL === '1';
const KEYS = 200;
const PARTITIONS = 4;
const PROCESSES = 3;
const EVENTS = FULL ? 20_000 : 2_000;
const GROUP_EVENTS = FULL ? 20_000 : 1_000;
const RATE_EVENTS = FULL ? 20_000 : 1_000;
const RATE = { max: 200, perMs: 1000 };
const GROUP_CONCURRENCY = 8;
const CHILD: Omit<FlowChildConfig, 'stream' | 'group' | 'log'> = {
  concurrency: 16,
  maxDemand: 16,
  // A killed process's keys wait for its leases to expire: short leases keep the run short.
  leaseMs: 2000,
  pollMs: 200,
  workMs: [2, 6],
};
/**
 * Bounds against hangs, never timings. At full size the kills set the pace: under
 * groupConcurrency a killed process's leases hold the group's places until they
 * expire, and 20,000 events took 6 minutes on Redis.
 */
const WAIT_MS = FULL ? 1_800_000 : 240_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One consumer process (or in-process stand-in). */
interface Incarnation {
  pid: number;
  /** SIGKILL: no drain, no settle. Resolves with the time it was seen dead. */
  kill(): Promise<number>;
  /** Drain and end. */
  stop(): Promise<void>;
}

interface Fleet {
  spawn(config: FlowChildConfig): Promise<Incarnation>;
  /** Kill whatever is still running (after a failed test). */
  killAll(): void;
}

function forkFleet(backend: { name: string; options: Record<string, unknown> }): Fleet {
  const started: ChildProcess[] = [];
  const alive = (p: ChildProcess) => p.exitCode === null && p.signalCode === null;
  return {
    async spawn(config) {
      const proc = fork(join(__dirname, 'flow-child.ts'), [], {
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        env: {
          ...process.env,
          [BACKEND_ENV.name]: backend.name,
          [BACKEND_ENV.options]: JSON.stringify(backend.options),
          RHEO_TEST_FLOW: JSON.stringify(config),
          TS_NODE_TRANSPILE_ONLY: 'true',
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      started.push(proc);
      // 'close', not 'exit': 'exit' can come before the last IPC messages were read.
      const exited = new Promise<void>((resolve) => proc.on('close', () => resolve()));
      let said!: () => void;
      const goodbye = new Promise<void>((resolve) => (said = resolve));
      await new Promise<void>((resolve, reject) => {
        proc.on('message', (m: FlowChildMessage) => {
          if (m.k === 'ready') resolve();
          if (m.k === 'bye') said();
        });
        proc.on('exit', (code, signal) => reject(new Error(`flow child exited (${code ?? signal}) before it was ready`)));
      });
      return {
        pid: proc.pid!,
        async kill() {
          proc.kill('SIGKILL');
          await exited;
          return Date.now();
        },
        async stop() {
          if (proc.connected) proc.send({ type: 'stop' });
          await Promise.race([Promise.all([goodbye, exited]), exited, sleep(20_000)]);
          if (alive(proc)) throw new Error(`flow child ${proc.pid} did not stop`);
        },
      };
    },
    killAll() {
      for (const p of started) if (alive(p)) p.kill('SIGKILL');
    },
  };
}

/**
 * Consumers in this process on one store. A kill cuts the consumer off the store at
 * once: every call it makes from then on, and every answer still on its way, never
 * resolves, as if its process had died mid-call; the store keeps its leases until
 * they expire.
 */
function inProcessFleet(backend: Backend): Fleet {
  let serial = 0;
  const never = new Promise<never>(() => undefined);
  return {
    async spawn(config) {
      const pid = 900_000 + ++serial;
      let dead = false;
      const mortal = (value: unknown) => (value instanceof Promise ? value.then((v: unknown) => (dead ? never : v)) : value);
      const cut = new Proxy(backend, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target) as unknown;
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => (dead ? never : mortal((value as (...a: unknown[]) => unknown).apply(target, args)));
        },
      });
      const inner = await openFlowLog(config.log);
      const log: FlowLog = {
        write: (row) => (dead ? never : inner.write(row).then(() => (dead ? never : undefined))),
        rows: () => inner.rows(),
        close: () => inner.close(),
      };
      const rheo = new RheoFacade(cut);
      const consumer = flowConsumer(rheo, config, log, pid, `flow-${pid}`);
      consumer.start();
      return {
        pid,
        async kill() {
          dead = true;
          // Its timers stop; what it would still say to the store never arrives.
          void consumer.drain(1);
          return Date.now();
        },
        async stop() {
          await consumer.drain(10_000);
        },
      };
    },
    killAll() {},
  };
}

/** What a scenario's run left behind for the checker. */
interface Outcome {
  runs: Run[];
  problems: string[];
  expected: Array<{ key: string; seq: number }>;
  kills: number;
  ms: number;
}

export function runFlowSuite(target: FlowTarget): void {
  const { rheo } = target;

  if (!rheo.backend.capabilities.guarantees.flowControl) {
    // Until the backend declares it, it must refuse the settings the suite needs, naming them.
    describe(`${target.name}: flow control across processes`, () => {
      afterAll(async () => {
        await rheo.close();
        await target.cleanup();
      });
      it('refuses flow settings while it does not declare guarantees.flowControl', async () => {
        await rheo.init();
        await rheo.createStream('flow-refused', { partitions: PARTITIONS });
        for (const [field, options] of [
          ['ordering', { ordering: 'key' }],
          ['groupConcurrency', { groupConcurrency: GROUP_CONCURRENCY }],
          ['rateLimit', { rateLimit: RATE }],
        ] as const)
          await expect(rheo.createGroup('flow-refused', `g-${field}`, options)).rejects.toMatchObject({
            code: 'invalid_argument',
            message: expect.stringContaining(field),
          });
      });
    });
    return;
  }

  const fleet = target.processes.kind === 'fork' ? forkFleet(target.processes.backend) : inProcessFleet(target.processes.backend);
  const killEveryMs = target.killEveryMs ?? 1000;

  /**
   * Append `events` events over KEYS keys to a fresh stream whose group has
   * `options`, run PROCESSES consumers over it, killing one every killEveryMs (the
   * first once a twentieth of the events have run) and starting another in its
   * place, until the group's lag is 0; then drain them and read the log.
   */
  async function run(scenario: string, options: GroupOptions, events: number): Promise<Outcome> {
    const stream = `flow-${scenario}`;
    await rheo.createStream(stream, { partitions: PARTITIONS });
    // A kill takes an attempt from each lease it strands; at full size an event can be
    // stranded a few times over. The scenarios judge flow limits, not dead letters.
    await rheo.createGroup(stream, 'g', { maxAttempts: 1000, ...options });
    const spec = target.log(scenario);
    const log = await openFlowLog(spec);
    const config: FlowChildConfig = { ...CHILD, stream, group: 'g', log: spec };
    const deaths: Death[] = [];
    const t0 = Date.now();
    try {
      const slots: Array<Promise<Incarnation>> = [];
      /** Each slot's process once it is up; null while it starts. */
      const up: Array<Incarnation | null> = [];
      const start = (slot: number) => {
        up[slot] = null;
        slots[slot] = fleet.spawn(config).then((inc) => (up[slot] = inc));
      };
      for (let i = 0; i < PROCESSES; i++) start(i);
      await Promise.all(slots);
      const expected: Array<{ key: string; seq: number }> = [];
      for (let i = 0; i < events; i += 1000) {
        const batch = [];
        for (let j = i; j < Math.min(events, i + 1000); j++) {
          const key = `k${j % KEYS}`;
          const seq = Math.floor(j / KEYS);
          expected.push({ key, seq });
          batch.push({ key, type: 'flow', payload: { seq } });
        }
        await rheo.appendBatch(stream, batch);
      }
      const ended = async () => (await log.rows()).filter((r) => r.phase === 'end').length;
      await until('a twentieth of the events to have run', async () => (await ended()) >= events / 20, WAIT_MS, 20);
      const deadline = Date.now() + WAIT_MS;
      for (let k = 0; ; k++) {
        // In turn, the next slot whose process is up (those still starting are passed over),
        // while another stays up: the group always has a consumer, as when one of three dies.
        const slot = Array.from({ length: PROCESSES }, (_, d) => (k + d) % PROCESSES).find((i) => up[i] !== null);
        if (slot !== undefined && up.filter((u) => u !== null).length > 1) {
          const victim = up[slot]!;
          up[slot] = null;
          deaths.push({ pid: victim.pid, diedAt: await victim.kill() });
          start(slot);
        }
        await sleep(killEveryMs);
        if ((await rheo.lag(stream, 'g')).lag === 0) break;
        if (Date.now() > deadline) throw new Error(`${scenario}: lag never reached 0: ${JSON.stringify(await rheo.lag(stream, 'g'))}`);
      }
      for (const inc of await Promise.all(slots)) await inc.stop();
      const ms = Date.now() - t0;
      expect(await rheo.groupInfo(stream, 'g')).toMatchObject({ inflight: 0, deadLetters: 0, lag: { lag: 0 } });
      const { runs, problems } = runsOf(await log.rows(), deaths);
      return { runs, problems, expected, kills: deaths.length, ms };
    } finally {
      fleet.killAll();
      await log.close();
    }
  }

  function report(scenario: string, o: Outcome, extra: Record<string, unknown>): void {
    const cut = o.runs.filter((r) => r.end === null).length;
    const again = o.runs.length - new Set(o.runs.map((r) => `${r.key}#${r.seq}`)).size;
    console.log(
      `${target.name} flow ${scenario}: ${JSON.stringify({ events: o.expected.length, keys: KEYS, processes: PROCESSES, kills: o.kills, runs: o.runs.length, cutByKills: cut, runAgain: again, ms: o.ms, ...extra })}`,
    );
  }

  describe(`${target.name}: flow control across processes, one SIGKILLed every ${killEveryMs} ms (${FULL ? 'full size' : 'CI size; RHEO_FLOW_FULL=1 for 20,000 events'})`, () => {
    beforeAll(() => rheo.init());
    afterAll(async () => {
      fleet.killAll();
      await rheo.close();
      await target.cleanup();
    });

    it(
      `ordering 'key': ${EVENTS} events of ${KEYS} keys start in each key's order, never two of a key at once, none lost`,
      async () => {
        const o = await run('key', { ordering: 'key' }, EVENTS);
        const inversions = orderInversions(o.runs);
        const overlaps = keyOverlaps(o.runs);
        const lost = lostEvents(o.runs, o.expected);
        report('key', o, { inversions: inversions.length, overlaps: overlaps.length, lost: lost.length });
        expect(o.problems).toEqual([]);
        expect(inversions).toEqual([]);
        expect(overlaps).toEqual([]);
        expect(lost).toEqual([]);
      },
      WAIT_MS + 60_000,
    );

    it(
      `groupConcurrency ${GROUP_CONCURRENCY}: never more than ${GROUP_CONCURRENCY} handlers running across the processes, none lost`,
      async () => {
        const o = await run('group', { groupConcurrency: GROUP_CONCURRENCY }, GROUP_EVENTS);
        const most = mostRunning(o.runs);
        const lost = lostEvents(o.runs, o.expected);
        report('groupConcurrency', o, { mostRunning: most.most, lost: lost.length });
        expect(o.problems).toEqual([]);
        expect(most.most).toBeLessThanOrEqual(GROUP_CONCURRENCY);
        expect(lost).toEqual([]);
      },
      WAIT_MS + 60_000,
    );

    it(
      `rateLimit ${RATE.max} per ${RATE.perMs} ms: no span of ${RATE.perMs} ms of the store's claims holds more than ${RATE.max}, none lost`,
      async () => {
        const o = await run('rate', { rateLimit: RATE }, RATE_EVENTS);
        const claims = busiestWindow(claimTimes(o.runs), RATE.perMs);
        // For information: the handlers' own clocks, which lag their claims by a prefetch and a wake-up.
        const starts = busiestWindow(
          o.runs.map((r) => r.start),
          RATE.perMs,
        );
        const lost = lostEvents(o.runs, o.expected);
        report('rateLimit', o, {
          busiestClaimWindow: claims.most,
          busiestHandlerStartWindow: starts.most,
          lost: lost.length,
          // A breach: every claim call of the window, so the reader sees which processes' claims made it.
          ...(claims.most > RATE.max ? { windowFrom: claims.from, windowClaims: claimsIn(o.runs, claims.from, RATE.perMs) } : {}),
        });
        expect(o.problems).toEqual([]);
        expect(claims.most).toBeLessThanOrEqual(RATE.max);
        expect(lost).toEqual([]);
      },
      WAIT_MS + 60_000,
    );
  });
}
