// The parent side of multi-process tests: starts consumer children (see
// consumer-child.ts), gathers what they report, stops or kills them, and checks
// the lease history they reported against the at-least-once and fencing rules.
import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { BACKEND_ENV } from './backend-from-env';
import type { ChildConfig, ChildRecord } from './consumer-child';

export type { ChildConfig, ChildRecord } from './consumer-child';

/** A running consumer child. */
export interface Child {
  index: number;
  process: ChildProcess;
  /** Resolves when the child has exited (code or signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Handler ends reported so far. */
  handled: number;
  /** Resolves on the child's last message after a stop: every report it sent before has arrived. */
  goodbye: Promise<void>;
}

/** A set of consumer children sharing one record log. */
export interface Consumers {
  children: Child[];
  records: ChildRecord[];
  /** Drain and exit every live child; resolves when all have exited. */
  stop(): Promise<void>;
  /** SIGKILL one child: no drain, no settle, its leases are left to expire. */
  kill(index: number): Promise<void>;
}

/** How to start a child: `faketime` runs it under libfaketime with that offset (`+45s`, `-45s`), its wall clock skewed. */
export interface ChildLaunch {
  faketime?: string;
}

/** Start `n` consumer children on the backend `backend` built from `options` (JSON-able). */
export async function startConsumers(
  n: number,
  backend: { name: string; options: Record<string, unknown> },
  config: Omit<ChildConfig, 'index'>,
  launch: (index: number) => ChildLaunch = () => ({}),
): Promise<Consumers> {
  const records: ChildRecord[] = [];
  const script = join(__dirname, 'consumer-child.ts');
  const children: Child[] = [];
  const ready: Promise<void>[] = [];
  for (let index = 0; index < n; index++) {
    const { faketime } = launch(index);
    const nodeArgs = ['-r', 'ts-node/register/transpile-only'];
    const proc = fork(script, [], {
      // fork runs `execPath ...execArgv script`: faketime then execs node with the IPC channel inherited.
      ...(faketime ? { execPath: 'faketime', execArgv: ['-f', faketime, process.execPath, ...nodeArgs] } : { execArgv: nodeArgs }),
      env: {
        ...process.env,
        // Only the wall clock is skewed: timers (the monotonic clock) keep real time.
        ...(faketime ? { FAKETIME_DONT_FAKE_MONOTONIC: '1' } : {}),
        [BACKEND_ENV.name]: backend.name,
        [BACKEND_ENV.options]: JSON.stringify(backend.options),
        RHEO_TEST_CHILD: JSON.stringify({ ...config, index }),
        TS_NODE_TRANSPILE_ONLY: 'true',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let said!: () => void;
    const child: Child = {
      index,
      process: proc,
      handled: 0,
      // 'close', not 'exit': 'exit' can come before the last IPC messages were read.
      exited: new Promise((resolve) => proc.on('close', (code, signal) => resolve({ code, signal }))),
      goodbye: new Promise<void>((resolve) => (said = resolve)),
    };
    ready.push(
      new Promise((resolve, reject) => {
        proc.on('message', (m: ChildRecord | { k: 'ready' } | { k: 'bye' }) => {
          if (m.k === 'ready') return resolve();
          if (m.k === 'bye') return said();
          if (m.k === 'end') child.handled++;
          records.push(m);
        });
        proc.on('exit', (code) => reject(new Error(`consumer child ${index} exited with ${code} before it was ready`)));
      }),
    );
    children.push(child);
  }
  await Promise.all(ready);
  const alive = (c: Child) => c.process.exitCode === null && c.process.signalCode === null;
  return {
    children,
    records,
    async stop() {
      const stopping = children.filter((c) => alive(c) && c.process.connected);
      for (const c of stopping) c.process.send({ type: 'stop' });
      // IPC is ordered: once a child's goodbye arrived, so did every report before it.
      await Promise.all(stopping.map((c) => Promise.race([c.goodbye, c.exited])));
      await Promise.all(children.map((c) => c.exited));
    },
    async kill(index: number) {
      children[index].process.kill('SIGKILL');
      await children[index].exited;
    },
  };
}

/** One lease as reported: when it was taken, until when it was live, how it ended. */
export interface LeaseHistory {
  eventId: string;
  leaseId: string;
  child: number;
  attempt: number;
  leasedAt: number;
  /** The last expiry the store granted (fetch or renewal). */
  expiresAt: number;
  /** When its ack succeeded, if it did. */
  ackedAt: number | null;
}

/** Fold the records into one history per lease, grouped by event id. */
export function leaseHistories(records: ChildRecord[]): Map<string, LeaseHistory[]> {
  const byLease = new Map<string, LeaseHistory>();
  for (const r of records) {
    if (r.k === 'lease') {
      byLease.set(r.leaseId, {
        eventId: r.eventId,
        leaseId: r.leaseId,
        child: r.child,
        attempt: r.attempt,
        leasedAt: r.leasedAt,
        expiresAt: r.expiresAt,
        ackedAt: null,
      });
    }
  }
  for (const r of records) {
    const h = byLease.get((r as { leaseId: string }).leaseId);
    if (!h) continue;
    if (r.k === 'renew') h.expiresAt = Math.max(h.expiresAt, r.expiresAt);
    if (r.k === 'acked') h.ackedAt = r.at;
  }
  const byEvent = new Map<string, LeaseHistory[]>();
  for (const h of byLease.values()) byEvent.set(h.eventId, [...(byEvent.get(h.eventId) ?? []), h]);
  for (const hs of byEvent.values()) hs.sort((a, b) => a.leasedAt - b.leasedAt || a.attempt - b.attempt);
  return byEvent;
}

/**
 * Violations of the lease rules in a history: two different leases of one event
 * live at the same time (the later one taken before the earlier one expired or
 * was acked), attempts that repeat or go backwards, an event acked by no lease.
 * Returns human-readable lines; empty means the history is sound.
 */
export function leaseViolations(
  histories: Map<string, LeaseHistory[]>,
  expectedEventIds: Iterable<string>,
  /** Children that were killed: their last reports (an ack that did commit) may never have arrived. */
  killed: Iterable<number> = [],
): string[] {
  const problems: string[] = [];
  const lost = new Set(killed);
  for (const id of expectedEventIds) {
    const hs = histories.get(id);
    if (!hs || hs.length === 0) problems.push(`event ${id} was never leased`);
    else if (!hs.some((h) => h.ackedAt !== null) && !lost.has(hs[hs.length - 1].child)) problems.push(`event ${id} was never acked`);
  }
  for (const [id, hs] of histories) {
    for (let i = 1; i < hs.length; i++) {
      const a = hs[i - 1];
      const b = hs[i];
      const liveUntil = a.ackedAt === null ? a.expiresAt : Math.min(a.expiresAt, a.ackedAt);
      if (b.leasedAt < liveUntil) {
        problems.push(
          `event ${id}: lease ${b.leaseId} (child ${b.child}, at ${b.leasedAt}) taken while ${a.leaseId} (child ${a.child}) was live until ${liveUntil}`,
        );
      }
      if (b.attempt <= a.attempt) problems.push(`event ${id}: attempt ${b.attempt} after attempt ${a.attempt}`);
    }
  }
  return problems;
}
