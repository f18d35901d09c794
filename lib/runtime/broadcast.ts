import { randomBytes } from 'node:crypto';
import { isRheoError, RheoError, toRheoError } from '../core/errors';
import { MAX_DURATION_MS, MAX_NAME_LENGTH } from '../core/limits';
import type { Rheo } from '../core/rheo';
import type { GroupConfig, GroupOptions } from '../core/types';
import { checkInt, checkKeys, checkName, checkObject, keySet } from '../core/validate';

/** Default {@link BroadcastOptions.ttlMs}: a crashed instance's group is collected 30 to 60 s after its last heartbeat. */
export const DEFAULT_BROADCAST_TTL_MS = 30_000;
/** Smallest {@link BroadcastOptions.ttlMs}: a heartbeat every third of it must fit a store round trip with room to spare. */
export const MIN_BROADCAST_TTL_MS = 100;
/** Hex digits of an instance id: 64 random bits, so two instances never draw the same one. */
const ID_DIGITS = 16;
/** What `<group>.<instance id>` adds to the group's name. */
export const BROADCAST_SUFFIX_LENGTH = 1 + ID_DIGITS;

/** What a {@link BroadcastMember} reports; every callback is optional and must not throw. */
export interface BroadcastEvents {
  /**
   * This member's group was found gone (its heartbeat lapsed for longer than
   * `ttlMs`, and another instance collected it) and was created again at the end:
   * events appended in between were not received by this instance.
   */
  rejoined?(group: string): void;
  /** Another instance's group was collected: its heartbeat had stopped for `ttlMs` (a crashed instance). */
  collected?(group: string): void;
  /** A heartbeat or a collection failed; the next heartbeat tries again. */
  error?(error: RheoError, during: 'heartbeat' | 'collect'): void;
  /** Heartbeats succeed again after `error`. */
  recovered?(): void;
}

/** Options of a {@link BroadcastMember}. */
export interface BroadcastOptions extends Pick<GroupOptions, BroadcastGroupSetting> {
  stream: string;
  /** The broadcast group's name; each instance consumes its own group `<group>.<instance id>`. */
  group: string;
  /**
   * How long an instance's group outlives its last heartbeat, ms (heartbeats every
   * third of it). Default 30000, at least 100. Use the same value in every instance.
   */
  ttlMs?: number;
  events?: BroadcastEvents;
  /** No timers: the caller runs {@link BroadcastMember.beat} and {@link BroadcastMember.collect} (tests with a ManualClock). */
  manual?: boolean;
}

/**
 * What a broadcast group may be created with: not the group-wide flow limits
 * (`groupConcurrency`, `rateLimit`), which would hold per instance, each instance
 * consuming a group of its own.
 */
export type BroadcastGroupSetting = 'maxAttempts' | 'retry' | 'ordering' | 'keyConcurrency';

const OPTION_KEYS = keySet('a BroadcastMember option', [
  'stream',
  'group',
  'ttlMs',
  'maxAttempts',
  'retry',
  'ordering',
  'keyConcurrency',
  'events',
  'manual',
  'error',
]);
const EVENT_KEYS = keySet('a BroadcastMember event', ['rejoined', 'collected', 'error', 'recovered']);

/** What one heartbeat found: the group held, created again after it was collected, or the turn held by a collector now. */
export type BeatResult = 'held' | 'rejoined' | 'lost';

/**
 * One instance's membership of a broadcast group: every running instance gets
 * every event because each consumes a group of its own, `<group>.<instance id>`
 * (a random id per member, so a restarted process never resumes an old group),
 * created at the end of the stream when it joins and deleted when it leaves.
 *
 * Liveness is a turn on a named job (`Backend.claimTurn`), one per member,
 * renewed every `ttlMs / 3`: the heartbeat. An instance that crashed leaves its
 * group behind; every member collects, at join and every `ttlMs`, the sibling
 * groups (`<group>.` and an id) whose heartbeat job it can claim, which is
 * possible only once their holder stopped renewing it for `ttlMs`. The turn
 * orders everything: a member claims its job before it creates its group and
 * deletes its group only after giving the job up, and a collector deletes a
 * group only while it holds the group's job, so a member that keeps beating
 * never loses its group. One that stalls past `ttlMs` may; its next heartbeat
 * finds the group gone and creates it again at the end (`rejoined`).
 */
export class BroadcastMember {
  /** This member's random id. */
  readonly instanceId: string;
  /** The group this member consumes: `<group>.<instance id>`. */
  readonly group: string;
  readonly stream: string;
  readonly ttlMs: number;
  private readonly base: string;
  private readonly settings: Pick<GroupOptions, BroadcastGroupSetting>;
  private readonly sibling: RegExp;
  private timer?: NodeJS.Timeout;
  private beats = 0;
  private failing = false;
  /** The one heartbeat or collection running: they never overlap. */
  private work: Promise<unknown> = Promise.resolve();
  private state: 'new' | 'joined' | 'left' = 'new';

  /** Validates the options (RheoError naming the field); touches nothing. */
  constructor(
    private readonly rheo: Rheo,
    private readonly options: BroadcastOptions,
  ) {
    const o = checkObject('options', options);
    for (const k of ['groupConcurrency', 'rateLimit'])
      if (Object.prototype.hasOwnProperty.call(o, k))
        throw RheoError.invalid(
          k,
          'cannot be set on a broadcast group: each instance consumes a group of its own, so the limit would hold per instance, not across instances',
        );
    checkKeys('options', o, OPTION_KEYS);
    if (options.events !== undefined) checkKeys('events', checkObject('events', options.events), EVENT_KEYS);
    this.stream = checkName('stream', options.stream);
    this.base = checkName('group', options.group);
    if (this.base.length + BROADCAST_SUFFIX_LENGTH > MAX_NAME_LENGTH)
      throw RheoError.invalid(
        'group',
        `must be at most ${MAX_NAME_LENGTH - BROADCAST_SUFFIX_LENGTH} characters for a broadcast group (each instance adds .<${ID_DIGITS}-digit id>)`,
      );
    this.ttlMs =
      options.ttlMs === undefined ? DEFAULT_BROADCAST_TTL_MS : checkInt('ttlMs', options.ttlMs, MIN_BROADCAST_TTL_MS, MAX_DURATION_MS);
    const { maxAttempts, retry, ordering, keyConcurrency } = options;
    this.settings = { maxAttempts, retry, ordering, ...(keyConcurrency !== undefined && { keyConcurrency }) };
    this.instanceId = randomBytes(ID_DIGITS / 2).toString('hex');
    this.group = `${this.base}.${this.instanceId}`;
    this.sibling = new RegExp(`^${escapeRegExp(this.base)}\\.[0-9a-f]{${ID_DIGITS}}$`);
  }

  /** The heartbeat job of a member's group: JSON keeps (stream, group) pairs apart whatever their characters. */
  static jobOf(stream: string, group: string): string {
    return `rheo:broadcast:${JSON.stringify([stream, group])}`;
  }

  /**
   * Collect crashed siblings, take this member's heartbeat, create its group at
   * the end of the stream, then (unless `manual`) beat every `ttlMs / 3` and
   * collect every `ttlMs`. Rejects when the heartbeat or the group cannot be
   * written (nothing is left behind then).
   */
  async join(): Promise<GroupConfig> {
    if (this.state !== 'new') throw new RheoError('failed', `broadcast member ${this.group} already joined`);
    this.state = 'joined';
    // Before our own group exists, so a startup sweeps what crashed instances left.
    await this.collect().catch(() => undefined);
    let config: GroupConfig;
    try {
      if (!(await this.claim())) throw new RheoError('failed', `the heartbeat of ${this.group} is held by another instance`);
      config = await this.create();
    } catch (err) {
      this.state = 'left';
      // What was written goes; if even that fails, the others' collection removes it: the join's error is the news.
      await this.forget().catch(() => undefined);
      throw err;
    }
    if (!this.options.manual) this.schedule();
    return config;
  }

  /**
   * One heartbeat: renew this member's turn and check its group is still there
   * (creating it again at the end when it was collected). `lost` while a
   * collector holds the turn; the next heartbeat takes it back once released.
   */
  beat(): Promise<BeatResult> {
    return this.serial(async () => {
      if (this.state !== 'joined') return 'lost';
      if (!(await this.claim())) return 'lost';
      // Read from the store, not a cache: another process may have deleted the group.
      if (await this.rheo.backend.getGroup(this.stream, this.group)) return 'held';
      await this.create();
      this.report((e) => e.rejoined?.(this.group));
      return 'rejoined';
    });
  }

  /**
   * One collection: delete every sibling group whose heartbeat job this member can
   * claim (its holder stopped renewing it `ttlMs` ago, or gave it up), then give
   * the job up. Returns the groups it deleted.
   */
  collect(): Promise<string[]> {
    return this.serial(async () => {
      const collected: string[] = [];
      for (const g of await this.rheo.listGroups(this.stream)) {
        if (g.group === this.group || !this.sibling.test(g.group)) continue;
        const job = BroadcastMember.jobOf(this.stream, g.group);
        // Held by a live sibling (or another collector): not ours to touch.
        if (!(await this.rheo.backend.claimTurn(job, this.instanceId, this.ttlMs))) continue;
        try {
          await this.rheo.deleteGroup(this.stream, g.group, { confirm: true });
          collected.push(g.group);
          this.report((e) => e.collected?.(g.group));
        } catch (err) {
          // Collected by someone else meanwhile: nothing left to do but give the job up.
          if (!isRheoError(err, 'group_not_found')) throw err;
        }
        // Only after the delete: a sibling that comes back must not find its job free while its group is going.
        await this.rheo.backend.releaseTurn(job, this.instanceId);
      }
      return collected;
    });
  }

  /**
   * Stop beating and remove this member's group (its deliveries, leases and dead
   * letters with it) and its heartbeat. Run it after the group's consumer
   * drained. Idempotent; a store that does not answer leaves the group to the
   * other instances' collection.
   */
  async leave(): Promise<void> {
    if (this.state !== 'joined') {
      this.state = 'left';
      return;
    }
    this.state = 'left';
    clearTimeout(this.timer);
    await this.work.catch(() => undefined);
    await this.forget();
  }

  /** Give the heartbeat up, then delete the group: a crash in between leaves a group nobody beats for, which is collected. */
  private async forget(): Promise<void> {
    const job = BroadcastMember.jobOf(this.stream, this.group);
    await this.rheo.backend.releaseTurn(job, this.instanceId);
    try {
      await this.rheo.deleteGroup(this.stream, this.group, { confirm: true });
    } catch (err) {
      if (!isRheoError(err, 'group_not_found')) throw err;
    }
  }

  private claim(): Promise<boolean> {
    return this.rheo.backend.claimTurn(BroadcastMember.jobOf(this.stream, this.group), this.instanceId, this.ttlMs);
  }

  private create(): Promise<GroupConfig> {
    return this.rheo.createGroup(this.stream, this.group, { ...this.settings, start: 'end', ifNotExists: true });
  }

  /** Beat every third of the ttl (two may fail before the turn lapses); collect every third beat. */
  private schedule(): void {
    this.timer = setTimeout(
      () => {
        const collect = ++this.beats % 3 === 0;
        void this.tick(collect).finally(() => {
          if (this.state === 'joined') this.schedule();
        });
      },
      Math.max(1, Math.floor(this.ttlMs / 3)),
    );
    // A timer of ours never keeps the process alive on its own.
    this.timer.unref();
  }

  private async tick(collect: boolean): Promise<void> {
    try {
      await this.beat();
      if (this.failing) this.report((e) => e.recovered?.());
      this.failing = false;
    } catch (err) {
      this.failing = true;
      this.report((e) => e.error?.(toRheoError(err), 'heartbeat'));
      return;
    }
    if (!collect) return;
    try {
      await this.collect();
    } catch (err) {
      this.report((e) => e.error?.(toRheoError(err), 'collect'));
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.work.then(fn, fn);
    this.work = run.catch(() => undefined);
    return run;
  }

  private report(call: (events: BroadcastEvents) => void): void {
    if (!this.options.events) return;
    try {
      call(this.options.events);
    } catch {
      // A listener's failure is not the heartbeat's.
    }
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
