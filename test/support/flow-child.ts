// A consumer process of the flow suite (flow-suite.ts), on the backend named in its
// environment (backend-from-env.ts): one Consumer of the scenario's group whose
// handler writes a start row to the checker's log (flow-log.ts), works a few ms,
// and writes an end row, each row awaited before it goes on. The parent SIGKILLs
// it at will and starts another; { type: 'stop' } drains it and ends it. A parent
// that is gone (a failed or killed test run) leaves no child behind: the child
// exits when its IPC channel closes.
//   node -r ts-node/register/transpile-only test/support/flow-child.ts
import { Consumer, type Lease, type Rheo, Rheo as RheoFacade } from '../../lib';
import { backendFromEnv } from './backend-from-env';
import type { RunRow } from './flow-check';
import { type FlowLog, type FlowLogSpec, openFlowLog } from './flow-log';

/** The child's settings, passed as JSON in RHEO_TEST_FLOW. */
export interface FlowChildConfig {
  stream: string;
  group: string;
  concurrency: number;
  maxDemand: number;
  leaseMs: number;
  pollMs: number;
  /** Each handler works a random time in [min, max] ms. */
  workMs: [number, number];
  log: FlowLogSpec;
}

/** What each appended event carries: its key's place in its key's sequence. */
export interface FlowPayload {
  seq: number;
}

export type FlowChildMessage = { k: 'ready'; pid: number } | { k: 'bye' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One Consumer of the scenario whose handler runs are written to `log` as process `pid`. Not started. */
export function flowConsumer(rheo: Rheo, config: FlowChildConfig, log: FlowLog, pid: number, consumerId: string): Consumer {
  const row = (phase: RunRow['phase'], lease: Lease): RunRow => ({
    phase,
    eventId: lease.event.id,
    leaseId: lease.leaseId,
    key: lease.event.key ?? '',
    seq: (lease.event.payload as unknown as FlowPayload).seq,
    pid,
    consumer: lease.consumerId,
    attempt: lease.attempt,
    leasedAt: lease.leasedAt.getTime(),
    expiresAt: lease.expiresAt.getTime(),
    at: Date.now(),
  });
  const [min, max] = config.workMs;
  return new Consumer(
    rheo,
    {
      stream: config.stream,
      group: config.group,
      concurrency: config.concurrency,
      maxDemand: config.maxDemand,
      leaseMs: config.leaseMs,
      pollMs: config.pollMs,
      consumerId,
    },
    async (lease) => {
      await log.write(row('start', lease));
      await sleep(min + Math.floor(Math.random() * (max - min + 1)));
      await log.write(row('end', lease));
    },
  );
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env.RHEO_TEST_FLOW ?? '{}') as FlowChildConfig;
  const log = await openFlowLog(config.log);
  const rheo = new RheoFacade(backendFromEnv());
  const consumer = flowConsumer(rheo, config, log, process.pid, `flow-${process.pid}`);
  process.on('message', (m: { type?: string }) => {
    if (m?.type !== 'stop') return;
    void consumer
      .drain(10_000)
      .then(() => rheo.close())
      .then(() => log.close())
      .then(() => process.send?.({ k: 'bye' } satisfies FlowChildMessage, () => process.disconnect?.()));
  });
  await rheo.init();
  consumer.start();
  process.send?.({ k: 'ready', pid: process.pid } satisfies FlowChildMessage);
}

if (require.main === module) {
  process.on('disconnect', () => process.exit(0));
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
