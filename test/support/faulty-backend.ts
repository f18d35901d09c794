// A real backend with faults on demand. Every call goes to the wrapped backend
// (the memory backend in the runtime tests); a fault only replaces the answer,
// and for settles it can do so after the write really happened underneath.
import type {
  CancelDelayedRequest,
  PauseGroupRequest,
  RescheduleRequest,
  SkipRequest,
  UpdateGroupRequest,
  Backend,
  CreateGroupRequest,
  FetchRequest,
  NewEvent,
  QueryRequest,
  ReadRequest,
  RenewResult,
  ReplayRequest,
  ResolvedStart,
  SettleOp,
  SettleResult,
  TrimRequest,
  WaitRequest,
} from '../../lib/backends/backend';
import { RheoError, type RheoErrorCode } from '../../lib/core/errors';
import type { AppendOptions, Lease, Retention } from '../../lib/core/types';

/** A settle fault: which ops it hits, what it answers, and whether the write happens anyway. */
export interface SettleFault {
  /** Which settles it applies to; all kinds when absent. */
  kind?: SettleOp['kind'];
  /** Only ops whose event id matches. */
  eventId?: string;
  code: RheoErrorCode;
  /** true: apply the op underneath, then answer the error (a lost reply); false: answer without applying. */
  applied: boolean;
  /** How many matching ops it hits. Default 1. */
  times?: number;
}

/** One settle op as the wrapper saw it. */
export interface SettleRecord {
  kind: SettleOp['kind'];
  eventId: string;
  attempt: number;
  reason?: string;
  delayMs?: number;
  /** What the caller was answered. */
  answered: 'ok' | RheoErrorCode;
}

function fault(code: RheoErrorCode, what: string): RheoError {
  return new RheoError(code, `injected fault: ${what} answered ${code}`);
}

/** Wraps a real {@link Backend}; faults are armed per operation and consumed as they fire. */
export class FaultyBackend implements Backend {
  readonly name: string;
  readonly calls = { fetch: 0, renew: 0, settle: 0, release: 0, wait: 0 };
  /** Every lease given back through `release`, in order. */
  readonly released: Lease<unknown>[] = [];
  /** Every settle op, in order, with what it was answered. */
  readonly settles: SettleRecord[] = [];
  /** Every lease a renewal round carried, per round. */
  readonly renewRounds: Lease<unknown>[][] = [];

  private fetchFaults: Array<{ code: RheoErrorCode; times: number }> = [];
  private settleFaults: Array<Required<Omit<SettleFault, 'kind' | 'eventId'>> & Pick<SettleFault, 'kind' | 'eventId'>> = [];
  private lostOnRenew = new Map<string, { times: number; code: RheoErrorCode }>();
  private renewCallFaults: Array<{ code: RheoErrorCode; times: number }> = [];
  private settleCallFaults: Array<{ code: RheoErrorCode; times: number; eventId?: string }> = [];
  private waitDisabled = false;
  private waitSpurious = false;

  constructor(readonly inner: Backend) {
    this.name = inner.name;
  }

  get capabilities() {
    return this.inner.capabilities;
  }

  get clock() {
    return this.inner.clock;
  }

  // ------------------------------------------------------------ arming faults

  /** The next `times` fetch calls throw `code` (default backend_unavailable). */
  failFetch(times: number, code: RheoErrorCode = 'backend_unavailable'): this {
    this.fetchFaults.push({ code, times });
    return this;
  }

  /** Answer matching settle ops with an error, applied underneath or not. */
  failSettle(f: SettleFault): this {
    this.settleFaults.push({ times: 1, ...f });
    return this;
  }

  /**
   * The next `times` settle calls (default forever) that carry an op on event `eventId` (any call when absent)
   * throw `code` as a whole, applying nothing: what one statement for the whole batch does when one op breaks it.
   */
  failSettleCall(f: { code: RheoErrorCode; eventId?: string; times?: number }): this {
    this.settleCallFaults.push({ times: Number.POSITIVE_INFINITY, ...f });
    return this;
  }

  /** Renewals of the event `eventId` answer `code` (default stale_lease) for `times` rounds (default forever). The lease stays live underneath. */
  loseOnRenew(eventId: string, times = Number.POSITIVE_INFINITY, code: RheoErrorCode = 'stale_lease'): this {
    this.lostOnRenew.set(eventId, { times, code });
    return this;
  }

  /** The next `times` renew calls throw `code` as a whole. */
  failRenewCall(times: number, code: RheoErrorCode = 'backend_unavailable'): this {
    this.renewCallFaults.push({ code, times });
    return this;
  }

  /** Make `wait` absent in effect (resolves only on its timeout): the Consumer must poll. */
  disableWait(): this {
    this.waitDisabled = true;
    return this;
  }

  /** Make `wait` resolve at once, every time, with no work behind it (a misbehaving hint). */
  spuriousWakeUps(): this {
    this.waitSpurious = true;
    return this;
  }

  private take<T extends { times: number }>(list: T[], match: (f: T) => boolean = () => true): T | undefined {
    const i = list.findIndex((f) => f.times > 0 && match(f));
    if (i < 0) return undefined;
    const f = list[i];
    f.times--;
    if (f.times <= 0) list.splice(i, 1);
    return f;
  }

  // ------------------------------------------------------------ faulty operations

  async fetch(request: FetchRequest): Promise<Lease[]> {
    this.calls.fetch++;
    const f = this.take(this.fetchFaults);
    if (f) throw fault(f.code, 'fetch');
    return this.inner.fetch(request);
  }

  async renew(leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
    this.calls.renew++;
    this.renewRounds.push([...leases]);
    const f = this.take(this.renewCallFaults);
    if (f) throw fault(f.code, 'renew');
    const results = await this.inner.renew(leases, leaseMs);
    return results.map((r, i) => {
      const id = leases[i].event.id;
      const f = this.lostOnRenew.get(id);
      if (f === undefined || f.times <= 0) return r;
      f.times--;
      return { ok: false, error: fault(f.code, 'renew') };
    });
  }

  async settle(ops: SettleOp[]): Promise<SettleResult[]> {
    this.calls.settle++;
    const whole = this.take(this.settleCallFaults, (f) => f.eventId === undefined || ops.some((op) => op.lease.event.id === f.eventId));
    if (whole) {
      for (const op of ops) this.settles.push({ ...this.record(op), answered: whole.code });
      throw fault(whole.code, 'settle');
    }
    const planned = ops.map((op) =>
      this.take(
        this.settleFaults,
        (f) => (f.kind === undefined || f.kind === op.kind) && (f.eventId === undefined || f.eventId === op.lease.event.id),
      ),
    );
    // Apply underneath every op that is not faulted, plus faulted ones that "happened anyway".
    const through = ops.filter((_, i) => !planned[i] || planned[i]!.applied);
    const innerResults = through.length ? await this.inner.settle(through) : [];
    let k = 0;
    return ops.map((op, i): SettleResult => {
      const f = planned[i];
      let result: SettleResult;
      if (!f) result = innerResults[k++];
      else {
        if (f.applied) k++;
        result = { ok: false, error: fault(f.code, op.kind) };
      }
      this.settles.push({ ...this.record(op), answered: result.ok ? 'ok' : result.error.code });
      return result;
    });
  }

  private record(op: SettleOp): Omit<SettleRecord, 'answered'> {
    return {
      kind: op.kind,
      eventId: op.lease.event.id,
      attempt: op.lease.attempt,
      reason: op.kind === 'ack' ? undefined : op.reason,
      delayMs: op.kind === 'nack' ? op.delayMs : undefined,
    };
  }

  async release(leases: Lease<unknown>[]): Promise<SettleResult[]> {
    this.calls.release++;
    this.released.push(...leases);
    return this.inner.release(leases);
  }

  wait(request: WaitRequest): Promise<void> {
    this.calls.wait++;
    if (this.waitSpurious) return Promise.resolve();
    if (this.waitDisabled || !this.inner.wait) {
      return new Promise((resolve) => {
        const timer = setTimeout(done, request.timeoutMs);
        function done() {
          clearTimeout(timer);
          request.signal.removeEventListener('abort', done);
          resolve();
        }
        request.signal.addEventListener('abort', done);
      });
    }
    return this.inner.wait(request);
  }

  // ------------------------------------------------------------ plain delegation

  init() {
    return this.inner.init();
  }
  ping() {
    return this.inner.ping();
  }
  close() {
    return this.inner.close();
  }
  createStream(stream: string, partitions: number, retention?: Retention) {
    return this.inner.createStream(stream, partitions, retention);
  }
  setRetention(stream: string, retention: Retention) {
    return this.inner.setRetention(stream, retention);
  }
  trim(request: TrimRequest) {
    return this.inner.trim(request);
  }
  purgeDeadLetters(stream: string, group: string, before: Date | null) {
    return this.inner.purgeDeadLetters(stream, group, before);
  }
  countDeadLetters(stream: string, group: string, since: Date | null) {
    return this.inner.countDeadLetters(stream, group, since);
  }
  claimTurn(job: string, holder: string, ttlMs: number) {
    return this.inner.claimTurn(job, holder, ttlMs);
  }
  releaseTurn(job: string, holder: string) {
    return this.inner.releaseTurn(job, holder);
  }
  deleteGroup(stream: string, group: string) {
    return this.inner.deleteGroup(stream, group);
  }
  updateGroup(request: UpdateGroupRequest) {
    return this.inner.updateGroup(request);
  }
  pauseGroup(request: PauseGroupRequest) {
    return this.inner.pauseGroup(request);
  }
  resumeGroup(stream: string, group: string) {
    return this.inner.resumeGroup(stream, group);
  }
  skip(request: SkipRequest) {
    return this.inner.skip(request);
  }
  reschedule(request: RescheduleRequest) {
    return this.inner.reschedule(request);
  }
  cancelDelayed(request: CancelDelayedRequest) {
    return this.inner.cancelDelayed(request);
  }
  getStream(stream: string) {
    return this.inner.getStream(stream);
  }
  listStreams() {
    return this.inner.listStreams();
  }
  createGroup(request: CreateGroupRequest) {
    return this.inner.createGroup(request);
  }
  getGroup(stream: string, group: string) {
    return this.inner.getGroup(stream, group);
  }
  listGroups(stream: string) {
    return this.inner.listGroups(stream);
  }
  append(stream: string, events: NewEvent[], options: AppendOptions) {
    return this.inner.append(stream, events, options);
  }
  read(request: ReadRequest) {
    return this.inner.read(request);
  }
  query(request: QueryRequest) {
    return this.inner.query(request);
  }
  replay(request: ReplayRequest) {
    return this.inner.replay(request);
  }
  reset(stream: string, group: string, start: ResolvedStart) {
    return this.inner.reset(stream, group, start);
  }
  lag(stream: string, group: string) {
    return this.inner.lag(stream, group);
  }
  groupInfo(stream: string, group: string) {
    return this.inner.groupInfo(stream, group);
  }
  deadLetters(stream: string, group: string, limit: number, after?: string) {
    return this.inner.deadLetters(stream, group, limit, after);
  }
  redrive(stream: string, group: string, eventIds: string[] | 'all') {
    return this.inner.redrive(stream, group, eventIds);
  }
}
