import type { Clock } from '../../core/clock';
import type {
  DeadLetter,
  GroupConfig,
  GroupInfo,
  GroupPause,
  Lag,
  Lease,
  Retention,
  RheoEvent,
  StreamInfo,
  TrimResult,
} from '../../core/types';
import type {
  AppendedEvents,
  Backend,
  BackendDescription,
  CancelDelayedRequest,
  CreateGroupRequest,
  FetchedLeases,
  FetchRequest,
  NewEvent,
  PauseGroupRequest,
  QueryRequest,
  ReadRequest,
  RenewResult,
  ReplayRequest,
  RescheduleRequest,
  ResolvedStart,
  SettleOp,
  SettleResult,
  SkipRequest,
  TrimRequest,
  UpdateGroupRequest,
  WaitRequest,
} from '../backend';
import { createCapabilities } from '../capabilities';
import { memoryContext, open, wake, type MemoryContext } from './context';
import * as coordination from './coordination';
import * as delivery from './delivery';
import * as groupSettings from './group-settings';
import * as log from './log';
import * as pause from './pause';
import { checkOptions, type MemoryBackendOptions } from './options';
import * as recovery from './recovery';
import * as registry from './registry';
import * as retention from './retention';
import * as waiting from './waiting';

export type { MemoryBackendOptions } from './options';

/**
 * The in-process backend: ephemeral, single process, fast. Every operation is an
 * index lookup or a walk over open deliveries only; nothing scans the log except
 * `query`, which walks sequence ranges. The store is one {@link MemoryContext};
 * each contract section is a file of this folder (registry, log, delivery,
 * recovery, retention, coordination) and the class only delegates to it.
 */
export class MemoryBackend implements Backend {
  readonly name = 'memory';
  readonly capabilities = createCapabilities({
    guarantees: {
      durable: false,
      distributed: false,
      partitions: true,
      contiguousFrontier: true,
      replay: true,
      orderedPartitions: true,
      flowControl: true,
    },
    mechanisms: { notifications: true, batchWrites: true, secondaryIndexes: false, blockingReads: false, transactionalAppend: false },
  });
  readonly clock: Clock;
  private readonly ctx: MemoryContext;

  /**
   * Unlike the other backends' classes, this one checks what it is given: it is built
   * directly too (`new MemoryBackend({ clock })` in tests), with no driver or connection
   * to set up first, so its options are its settings, checked here by options.ts.
   */
  constructor(options: MemoryBackendOptions = {}) {
    this.clock = checkOptions(options).clock;
    this.ctx = memoryContext(this.clock);
  }

  async init(): Promise<void> {
    open(this.ctx);
  }

  /** In this process's memory: nothing survives a restart. */
  describe(): BackendDescription {
    return { target: 'in-process memory (not durable)' };
  }

  async ping(): Promise<void> {
    open(this.ctx);
  }

  async close(): Promise<void> {
    this.ctx.closed = true;
    for (const s of this.ctx.streams.values()) wake(s);
  }

  // Each contract method is its section's function (an async function: a refusal is a rejection, as before).

  createStream(stream: string, partitions: number, retention?: Retention): Promise<StreamInfo> {
    return registry.createStream(this.ctx, stream, partitions, retention);
  }
  getStream(stream: string): Promise<StreamInfo | null> {
    return registry.getStream(this.ctx, stream);
  }
  listStreams(): Promise<StreamInfo[]> {
    return registry.listStreams(this.ctx);
  }
  setRetention(stream: string, retention: Retention): Promise<StreamInfo> {
    return registry.setRetention(this.ctx, stream, retention);
  }
  createGroup(req: CreateGroupRequest): Promise<GroupConfig> {
    return registry.createGroup(this.ctx, req);
  }
  getGroup(stream: string, group: string): Promise<GroupConfig | null> {
    return registry.getGroup(this.ctx, stream, group);
  }
  listGroups(stream: string): Promise<GroupConfig[]> {
    return registry.listGroups(this.ctx, stream);
  }
  deleteGroup(stream: string, group: string): Promise<void> {
    return registry.deleteGroup(this.ctx, stream, group);
  }
  updateGroup(req: UpdateGroupRequest): Promise<GroupConfig> {
    return groupSettings.updateGroup(this.ctx, req);
  }
  pauseGroup(req: PauseGroupRequest): Promise<GroupPause> {
    return pause.pauseGroup(this.ctx, req);
  }
  resumeGroup(stream: string, group: string): Promise<boolean> {
    return pause.resumeGroup(this.ctx, stream, group);
  }

  skip(req: SkipRequest): Promise<SettleResult[]> {
    return waiting.skip(this.ctx, req);
  }
  reschedule(req: RescheduleRequest): Promise<SettleResult[]> {
    return waiting.reschedule(this.ctx, req);
  }
  cancelDelayed(req: CancelDelayedRequest): Promise<number> {
    return waiting.cancelDelayed(this.ctx, req);
  }

  append(stream: string, events: NewEvent[]): Promise<AppendedEvents> {
    return log.append(this.ctx, stream, events);
  }
  read(req: ReadRequest): Promise<RheoEvent[]> {
    return log.read(this.ctx, req);
  }
  query(req: QueryRequest): Promise<RheoEvent[]> {
    return log.query(this.ctx, req);
  }

  fetch(req: FetchRequest): Promise<FetchedLeases> {
    return delivery.fetch(this.ctx, req);
  }
  renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    return delivery.renew(this.ctx, leases, leaseMs);
  }
  settle(ops: SettleOp[]): Promise<SettleResult[]> {
    return delivery.settle(this.ctx, ops);
  }
  release(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    return delivery.release(this.ctx, leases);
  }

  replay(req: ReplayRequest): Promise<number> {
    return recovery.replay(this.ctx, req);
  }
  reset(stream: string, group: string, start: ResolvedStart): Promise<void> {
    return recovery.reset(this.ctx, stream, group, start);
  }
  redrive(stream: string, group: string, eventIds: string[] | 'all'): Promise<number> {
    return recovery.redrive(this.ctx, stream, group, eventIds);
  }
  lag(stream: string, group: string): Promise<Lag> {
    return recovery.lag(this.ctx, stream, group);
  }
  groupInfo(stream: string, group: string): Promise<GroupInfo> {
    return recovery.groupInfo(this.ctx, stream, group);
  }
  deadLetters(stream: string, group: string, limit: number, after?: string): Promise<DeadLetter[]> {
    return recovery.deadLetters(this.ctx, stream, group, limit, after);
  }
  countDeadLetters(stream: string, group: string, since: Date | null): Promise<number> {
    return recovery.countDeadLetters(this.ctx, stream, group, since);
  }

  trim(req: TrimRequest): Promise<TrimResult> {
    return retention.trim(this.ctx, req);
  }
  purgeDeadLetters(stream: string, group: string, before: Date | null): Promise<number> {
    return retention.purgeDeadLetters(this.ctx, stream, group, before);
  }

  claimTurn(job: string, holder: string, ttlMs: number): Promise<boolean> {
    return coordination.claimTurn(this.ctx, job, holder, ttlMs);
  }
  releaseTurn(job: string, holder: string): Promise<boolean> {
    return coordination.releaseTurn(this.ctx, job, holder);
  }
  wait(req: WaitRequest): Promise<void> {
    return coordination.wait(this.ctx, req);
  }
}

/**
 * An in-process backend for tests, demos and single-process apps that need no durability.
 * Its options are checked by the class (options.ts `checkOptions`), before anything is created.
 */
export function memoryBackend(options: MemoryBackendOptions = {}): MemoryBackend {
  return new MemoryBackend(options);
}
