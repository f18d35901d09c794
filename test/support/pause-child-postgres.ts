// A process for test/sql/postgres.pause.spec.ts, on PostgreSQL, in one of two modes
// (RHEO_PAUSE_CHILD, JSON):
// - 'consumer': one Consumer (concurrency 4) whose handlers block until the parent
//   sends { type: 'release' }. Every claim that leased something ("claim <id>"),
//   handler start ("start <id>") and ack ("acked <id>") is appended, synchronously,
//   to the shared log file the parent appends to as well: appends to one file are
//   ordered by the kernel, so the file is the one order of both processes' steps.
// - 'toggler': pauseGroup and resumeGroup in a loop until it is SIGKILLed.
//   node -r ts-node/register/transpile-only test/support/pause-child-postgres.ts
import { appendFileSync } from 'node:fs';
import { Consumer, type Lease, postgresBackend, Rheo } from '../../lib';
import type { Backend, FetchRequest } from '../../lib/backends/backend';

export interface PauseChildConfig {
  mode: 'consumer' | 'toggler';
  url: string;
  schema: string;
  stream: string;
  group: string;
  /** The shared log (consumer mode). */
  log?: string;
  leaseMs?: number;
  pollMs?: number;
}

/** The backend with every claim that leased something logged as it returns, before the Consumer sees its leases. */
function loggingClaims(inner: Backend, log: string): Backend {
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'fetch') {
        return async (req: FetchRequest) => {
          const leases = await target.fetch(req);
          if (leases.length > 0) appendFileSync(log, leases.map((l) => `claim ${l.event.id} ${Date.now()}\n`).join(''));
          return leases;
        };
      }
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function consumer(config: PauseChildConfig): Promise<void> {
  const log = config.log!;
  const rheo = new Rheo(loggingClaims(postgresBackend({ url: config.url, schema: config.schema, poolSize: 4 }), log));
  const blocked: Array<() => void> = [];
  let released = false;
  const group = new Consumer(
    rheo,
    { stream: config.stream, group: config.group, concurrency: 4, leaseMs: config.leaseMs, pollMs: config.pollMs },
    async (lease: Lease) => {
      appendFileSync(log, `start ${lease.event.id}\n`);
      process.send?.({ k: 'start', eventId: lease.event.id });
      if (!released) await new Promise<void>((resolve) => blocked.push(resolve));
    },
  );
  group.on('settled', ({ lease, outcome }) => {
    if (outcome.kind !== 'ack') return;
    appendFileSync(log, `acked ${lease.event.id}\n`);
    process.send?.({ k: 'acked', eventId: lease.event.id });
  });
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'release') {
      released = true;
      for (const resolve of blocked.splice(0)) resolve();
    }
    if (m?.type === 'stop') {
      void group
        .drain(10_000)
        .then(() => rheo.close())
        .then(() => process.send?.({ k: 'bye' }, () => process.disconnect?.()));
    }
  });
  await rheo.init();
  group.start();
  process.send?.({ k: 'ready' });
}

async function toggler(config: PauseChildConfig): Promise<void> {
  const rheo = new Rheo(postgresBackend({ url: config.url, schema: config.schema, poolSize: 2 }));
  await rheo.init();
  process.send?.({ k: 'ready' });
  for (let n = 0; ; n++) {
    await rheo.pauseGroup(config.stream, config.group, { reason: `toggle ${n}`, by: 'pause-child' });
    if (n === 0) process.send?.({ k: 'toggling' });
    await rheo.resumeGroup(config.stream, config.group);
  }
}

if (require.main === module) {
  // A parent that is gone (a failed or killed test run) leaves no process behind.
  process.on('disconnect', () => process.exit(0));
  const config = JSON.parse(process.env.RHEO_PAUSE_CHILD ?? '{}') as PauseChildConfig;
  (config.mode === 'toggler' ? toggler(config) : consumer(config)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
