// A consumer process for multi-process tests: builds the backend named in its
// environment, runs one Consumer over it, and reports every lease it was given,
// every renewal, every handler start and end, and every ack, to its parent over
// IPC, as they happen (so a SIGKILL loses as little as possible). The parent
// sends { type: 'stop' } to drain and exit.
//   node -r ts-node/register/transpile-only test/support/consumer-child.ts
import type { Backend, Lease } from '../../lib';
import type { FetchRequest, RenewResult } from '../../lib/backends/backend';
import { Consumer, Rheo } from '../../lib';
import { appendFileSync } from 'node:fs';
import { backendFromEnv } from './backend-from-env';

/** What a child reports. Times are epoch ms from the backend's clock (the system clock here). */
export type ChildRecord =
  | { k: 'lease'; child: number; eventId: string; leaseId: string; attempt: number; leasedAt: number; expiresAt: number }
  | { k: 'renew'; child: number; leaseId: string; expiresAt: number }
  | { k: 'start'; child: number; leaseId: string; at: number }
  | { k: 'end'; child: number; leaseId: string; at: number }
  | { k: 'acked'; child: number; leaseId: string; eventId: string; at: number };

/** The child's settings, passed as JSON in RHEO_TEST_CHILD. */
export interface ChildConfig {
  index: number;
  stream: string;
  group: string;
  maxDemand: number;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  /** Handler duration, ms (0: settle at once). */
  workMs: number;
  /**
   * A file each handler run appends `start|end <eventId> <child>` lines to, synchronously, as it
   * starts and ends: appends to one file are ordered by the kernel, so the file is the one order of
   * every process's runs, whatever each process's clock says.
   */
  runLog?: string;
}

/** The same backend with its fetch results and renewals reported. */
function observed(inner: Backend, report: (r: ChildRecord) => void, child: number): Backend {
  const b = Object.create(null) as Record<string, unknown>;
  for (const key of [
    'init',
    'ping',
    'close',
    'createStream',
    'getStream',
    'listStreams',
    'createGroup',
    'getGroup',
    'listGroups',
    'append',
    'read',
    'query',
    'settle',
    'replay',
    'reset',
    'lag',
    'groupInfo',
    'deadLetters',
    'redrive',
    'wait',
  ] as const) {
    const fn = (inner as unknown as Record<string, unknown>)[key];
    if (typeof fn === 'function') b[key] = (fn as (...a: unknown[]) => unknown).bind(inner);
  }
  b.name = inner.name;
  b.capabilities = inner.capabilities;
  b.clock = inner.clock;
  b.fetch = async (req: FetchRequest): Promise<Lease[]> => {
    const leases = await inner.fetch(req);
    for (const l of leases) {
      report({
        k: 'lease',
        child,
        eventId: l.event.id,
        leaseId: l.leaseId,
        attempt: l.attempt,
        leasedAt: l.leasedAt.getTime(),
        expiresAt: l.expiresAt.getTime(),
      });
    }
    return leases;
  };
  b.renew = async (leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> => {
    const results = await inner.renew(leases, leaseMs);
    results.forEach((r, i) => {
      if (r.ok) report({ k: 'renew', child, leaseId: leases[i].leaseId, expiresAt: r.expiresAt.getTime() });
    });
    return results;
  };
  return b as unknown as Backend;
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env.RHEO_TEST_CHILD ?? '{}') as ChildConfig;
  const report = (r: ChildRecord) => process.send?.(r);
  const rheo = new Rheo(observed(backendFromEnv(), report, config.index));
  const group = new Consumer(
    rheo,
    {
      stream: config.stream,
      group: config.group,
      maxDemand: config.maxDemand,
      concurrency: config.concurrency,
      leaseMs: config.leaseMs,
      pollMs: config.pollMs,
    },
    async (lease) => {
      if (config.runLog) appendFileSync(config.runLog, `start ${lease.event.id} ${config.index}\n`);
      report({ k: 'start', child: config.index, leaseId: lease.leaseId, at: Date.now() });
      if (config.workMs > 0) await new Promise((r) => setTimeout(r, config.workMs));
      report({ k: 'end', child: config.index, leaseId: lease.leaseId, at: Date.now() });
      if (config.runLog) appendFileSync(config.runLog, `end ${lease.event.id} ${config.index}\n`);
    },
  );
  group.on('settled', ({ lease, outcome }) => {
    if (outcome.kind === 'ack')
      report({ k: 'acked', child: config.index, leaseId: lease.leaseId, eventId: lease.event.id, at: Date.now() });
  });
  process.on('message', (m: { type?: string }) => {
    if (m?.type !== 'stop') return;
    // Say goodbye last and disconnect only once it is written: a disconnect with
    // reports still queued would drop them (an ack the parent never hears of).
    void group
      .drain(10_000)
      .then(() => rheo.close())
      .then(() => process.send?.({ k: 'bye', child: config.index }, () => process.disconnect?.()));
  });
  await rheo.init();
  group.start();
  process.send?.({ k: 'ready', child: config.index });
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
