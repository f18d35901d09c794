import type { Backend } from '../backends/backend';
import { type Clock, ManualClock } from '../core/clock';
import { Rheo } from '../core/rheo';
import { bulkCases } from './cases/bulk';
import { clockSkewCases } from './cases/clock-skew';
import { deadLetterCases } from './cases/dead-letters';
import { delayedCases } from './cases/delayed';
import { deleteGroupCases } from './cases/delete-group';
import { encodingCases } from './cases/encoding';
import { endingCases } from './cases/endings';
import { fencingCases } from './cases/fencing';
import { flowCases } from './cases/flow';
import { frontierCases } from './cases/frontier';
import { groupCases } from './cases/groups';
import { lifecycleCases } from './cases/lifecycle';
import { logCases } from './cases/log';
import { nameCases } from './cases/names';
import { orderingCases } from './cases/ordering';
import { pauseCases } from './cases/pause';
import { queryCases } from './cases/query';
import { raceCases } from './cases/races';
import { releaseCases } from './cases/release';
import { releaseTurnCases } from './cases/release-turn';
import { replayCases } from './cases/replay';
import { retentionCases } from './cases/retention';
import { retryCases } from './cases/retry';
import { transactionalAckCases } from './cases/transactional-ack';
import { updateGroupCases } from './cases/update-group';
import { waitingCases } from './cases/waiting';
import { wakeUpCases } from './cases/wake-ups';
import type { ConformanceContext } from './context';

/** A backend under test. */
export interface ConformanceTarget {
  /** Label used in describe(). */
  name: string;
  /**
   * Build a backend bound to `clock` (not yet init'ed; the suite wraps it in `new Rheo(backend)`). Called once per
   * suite, in beforeAll, with a ManualClock; for a durable backend also by the restart cases, and for a distributed one
   * by the store-time cases (with a `storeClock`, which the backend must measure against its store as it starts,
   * ADR 041): then it must open the same store.
   */
  create(clock: Clock): Promise<Backend>;
  /** After backend.close(): drop the schema / delete the keys the suite created. */
  cleanup?(): Promise<void>;
  /** A backend of the same kind pointing at nothing (e.g. a closed port), for the `ping -> backend_unavailable` case. */
  unreachable(): Backend;
}

/**
 * Registers the whole suite (describe/it) for one backend; cases gated only by
 * backend.capabilities. Capabilities are static per backend kind, so they are
 * read from `unreachable()` at registration time (a gated case is then simply not
 * registered, never skipped) and checked against the live backend in beforeAll.
 */
export function runConformance(target: ConformanceTarget): void {
  const unreachable = target.unreachable();
  const run = Math.random().toString(36).slice(2, 8);
  let counter = 0;
  const ctx = {
    caps: unreachable.capabilities,
    waits: typeof unreachable.wait === 'function',
    name: (prefix: string) => `${prefix}-${run}-${++counter}`,
  } as ConformanceContext;
  if (ctx.caps.guarantees.durable) ctx.reopen = () => target.create(ctx.clock);
  if (ctx.caps.guarantees.distributed) ctx.open = (clock) => target.create(clock);

  describe(`conformance: ${target.name}`, () => {
    beforeAll(async () => {
      ctx.clock = new ManualClock(Date.UTC(2026, 0, 1));
      ctx.backend = await target.create(ctx.clock);
      ctx.rheo = new Rheo(ctx.backend);
      await ctx.rheo.init();
    });

    afterAll(async () => {
      await ctx.rheo?.close();
      await unreachable.close().catch(() => undefined);
      await target.cleanup?.();
    });

    lifecycleCases(ctx, unreachable);
    logCases(ctx);
    encodingCases(ctx);
    queryCases(ctx);
    groupCases(ctx);
    nameCases(ctx);
    fencingCases(ctx);
    retryCases(ctx);
    deadLetterCases(ctx);
    endingCases(ctx);
    frontierCases(ctx);
    if (ctx.caps.guarantees.replay) replayCases(ctx);
    if (ctx.caps.guarantees.orderedPartitions) orderingCases(ctx);
    bulkCases(ctx);
    releaseCases(ctx);
    raceCases(ctx);
    retentionCases(ctx);
    delayedCases(ctx);
    deleteGroupCases(ctx);
    updateGroupCases(ctx);
    pauseCases(ctx);
    waitingCases(ctx);
    flowCases(ctx);
    releaseTurnCases(ctx);
    if (ctx.waits) wakeUpCases(ctx);
    if (ctx.caps.mechanisms.transactionalAck && ctx.caps.mechanisms.transactionalAppend) transactionalAckCases(ctx);
    if (ctx.caps.guarantees.distributed) clockSkewCases(ctx);
  });
}
