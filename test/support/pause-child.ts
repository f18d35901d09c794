// A child process for the pause suite (pause-suite.ts), on the backend named in its
// environment (backend-from-env.ts). RHEO_TEST_PAUSE (JSON, PauseChildConfig) picks the mode:
//   consumer  one Consumer whose handlers block until the parent sends { type: 'release' }
//             (later ones run through); every claim that leased something, paused answer,
//             handler start and settle is appended to the shared log file (synchronously:
//             appends to one file are ordered by the kernel, so the file is the one order of
//             both processes' events) and told over IPC;
//   toggle    pauseGroup and resumeGroup in a loop, telling the parent each call it made,
//             until it is killed.
// A parent that is gone (a failed or killed test run) leaves no child behind: the child
// exits when its IPC channel closes.
//   node -r ts-node/register/transpile-only test/support/pause-child.ts
import { appendFileSync } from 'node:fs';
import type { Backend, Lease } from '../../lib';
import { Consumer, Rheo } from '../../lib';
import type { FetchRequest, SettleOp, SettleResult } from '../../lib/backends/backend';
import { isPausedAnswer } from '../../lib/core/fetched';
import { backendFromEnv } from './backend-from-env';

export interface PauseChildConfig {
  mode: 'consumer' | 'toggle';
  stream: string;
  group: string;
  /** consumer: the shared log file. */
  log?: string;
  /** consumer: handlers running at once (and leases held). */
  concurrency?: number;
  /** consumer: the poll interval; the resume must wake the Consumer long before it. */
  pollMs?: number;
}

/** What the child tells its parent. `at`: Date.now() of this process, for the latency printed only. */
export type PauseChildMessage =
  | { k: 'ready' }
  | { k: 'claim'; eventId: string; at: number }
  | { k: 'start'; eventId: string }
  | { k: 'settled'; eventId: string }
  | { k: 'toggled'; call: 'pause' | 'resume' }
  | { k: 'bye' };

const send = (m: PauseChildMessage) => process.send?.(m);

/** The backend, with its claims and settles written to the log as the store answers them, before the Consumer sees them. */
function logged(inner: Backend, log: string): Backend {
  const write = (line: string) => appendFileSync(log, `${line}\n`);
  const fetch = async (req: FetchRequest) => {
    const leases = await inner.fetch(req);
    if (isPausedAnswer(leases)) write('paused-answer');
    const at = Date.now();
    for (const l of leases) {
      write(`claim ${l.event.id}`);
      send({ k: 'claim', eventId: l.event.id, at });
    }
    return leases;
  };
  const settle = async (ops: SettleOp[]): Promise<SettleResult[]> => {
    const results = await inner.settle(ops);
    results.forEach((r, i) => {
      if (!r.ok) return;
      write(`settle ${ops[i].lease.event.id}`);
      send({ k: 'settled', eventId: ops[i].lease.event.id });
    });
    return results;
  };
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'fetch') return fetch;
      if (prop === 'settle') return settle;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function runConsumer(config: PauseChildConfig): Promise<void> {
  const log = config.log!;
  const rheo = new Rheo(logged(backendFromEnv(), log));
  const waiting: Array<() => void> = [];
  let released = false;
  const concurrency = config.concurrency ?? 4;
  const pollMs = config.pollMs ?? 30_000;
  const releaseAll = () => {
    released = true;
    for (const release of waiting.splice(0)) release();
  };
  const consumer = new Consumer(
    rheo,
    // The lease outlasts the poll interval, as a Consumer requires.
    { stream: config.stream, group: config.group, concurrency, maxDemand: concurrency, pollMs, leaseMs: 2 * pollMs },
    async (lease: Lease) => {
      appendFileSync(log, `start ${lease.event.id}\n`);
      send({ k: 'start', eventId: lease.event.id });
      if (!released) await new Promise<void>((resolve) => waiting.push(resolve));
    },
  );
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'release') releaseAll();
    if (m?.type === 'stop') {
      releaseAll();
      void consumer
        .drain(10_000)
        .then(() => rheo.close())
        .then(() => process.send?.({ k: 'bye' } satisfies PauseChildMessage, () => process.disconnect?.()));
    }
  });
  await rheo.init();
  consumer.start();
  send({ k: 'ready' });
}

async function runToggle(config: PauseChildConfig): Promise<void> {
  const rheo = new Rheo(backendFromEnv());
  await rheo.init();
  send({ k: 'ready' });
  for (let n = 0; ; n++) {
    await rheo.pauseGroup(config.stream, config.group, { reason: `toggle ${n}`, by: 'pause-child' });
    send({ k: 'toggled', call: 'pause' });
    await rheo.resumeGroup(config.stream, config.group);
    send({ k: 'toggled', call: 'resume' });
  }
}

if (require.main === module) {
  process.on('disconnect', () => process.exit(0));
  const config = JSON.parse(process.env.RHEO_TEST_PAUSE ?? '{}') as PauseChildConfig;
  (config.mode === 'toggle' ? runToggle(config) : runConsumer(config)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
