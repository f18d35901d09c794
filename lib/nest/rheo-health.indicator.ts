import type { ModuleRef } from '@nestjs/core';
import { RheoError, toRheoError } from '../core/errors';
import { loadOptionalPeer } from '../core/optional-peer';
import { consumerKey } from './consumer-options';
import { checkInt, checkKeys, checkObject, keySet } from '../core/validate';
import type { RheoInstance } from './rheo-instance';
import type { RheoServer } from './rheo-server';

/** A (stream, group) to check: `{ stream, group }` or `'stream/group'` (split at the last `/`). */
export type RheoHealthGroup = string | { stream: string; group: string };

/** Thresholds of {@link RheoHealthIndicator.isHealthy}. */
export interface RheoHealthOptions {
  /** Down when a group's lag (events not yet terminal) exceeds this. */
  maxLag?: number;
  /** Down when a group's oldest unsettled event is older than this, ms. */
  maxOldestUnackedMs?: number;
  /**
   * Down when a group holds more dead letters than this: all of them, or with
   * {@link deadLetterWindowMs} only the recent ones. `0` turns the check down at the
   * first dead letter.
   */
  maxDeadLetters?: number;
  /**
   * Count towards {@link maxDeadLetters} only the dead letters dead-lettered within
   * this many ms before the check (by the backend's clock), so the check goes down
   * when events start dying and comes back up once they stop, without anyone
   * purging or redriving the old ones (as an alert on a failed-job rate would).
   * Needs `maxDeadLetters`.
   */
  deadLetterWindowMs?: number;
  /** Groups to check. Default: the consumers this process runs, else every group of every stream. */
  groups?: RheoHealthGroup[];
  /**
   * Hold a paused group (`Rheo#pauseGroup`) to {@link maxLag} and
   * {@link maxOldestUnackedMs} too. Default `false`: a pause stops the group's
   * claims on purpose, so its lag and its oldest unsettled event grow by design,
   * and the check reports the pause (`paused` in the group's figures) instead of
   * going down for it. Dead letters and the local consumer are checked either way.
   */
  checkLagWhilePaused?: boolean;
}

const OPTION_KEYS = keySet('a health check option', [
  'maxLag',
  'maxOldestUnackedMs',
  'maxDeadLetters',
  'deadLetterWindowMs',
  'groups',
  'checkLagWhilePaused',
]);
const GROUP_KEYS = keySet('a key of a health group', ['stream', 'group']);

/** Figures reported per group, under `'stream/group'`. */
export interface RheoGroupHealth {
  lag: number;
  inflight: number;
  deadLetters: number;
  /** With `deadLetterWindowMs`: the dead letters dead-lettered within the window. */
  deadLettersInWindow?: number;
  oldestUnsettledAgeMs: number | null;
  /** The local consumer's state when this process runs one. */
  consumer?: string;
  /** The local consumer's renewal error while its renewals are failing. */
  renewals?: string;
  /** Conditions of the store that put the group's data at risk, and a clock far from the store's (see `GroupInfo.warnings`). */
  warnings?: string[];
  /** While a pause holds the group back (`Rheo#pauseGroup`): since when, until when (null: until resumed), why and by whom (ISO times). */
  paused?: { since: string; until: string | null; reason: string | null; by: string | null };
}

/** Terminus's `HealthIndicatorResult` shape, declared here so typings do not need @nestjs/terminus. */
export type RheoHealthResult<K extends string = string> = Record<K, { status: 'up' | 'down' } & Record<string, unknown>>;

interface HealthSession {
  up(data?: Record<string, unknown>): Record<string, unknown>;
  down(data?: Record<string, unknown>): Record<string, unknown>;
}
interface HealthIndicatorServiceLike {
  check(key: string): HealthSession;
}

/**
 * A Terminus health indicator for an instance: up with per-group lag, inflight
 * and dead-letter counts; down when the backend does not answer, a local
 * consumer is backing off on errors or failing to renew its leases, or a group
 * is over a threshold (the reason names the group). A paused group is reported
 * with its pause, and its lag fails nothing unless `checkLagWhilePaused` says so. Built on Terminus's `HealthIndicatorService` (11.1 and 12),
 * which is loaded when first used so `@nestjs/terminus` stays optional (docs/adr/012).
 */
export class RheoHealthIndicator {
  private service?: HealthIndicatorServiceLike;

  constructor(
    private readonly instance: RheoInstance,
    private readonly server: RheoServer,
    private readonly moduleRef: ModuleRef,
  ) {}

  private indicators(): HealthIndicatorServiceLike {
    if (this.service) return this.service;
    const terminus = loadOptionalPeer<{ HealthIndicatorService: new () => HealthIndicatorServiceLike }>(
      '@nestjs/terminus',
      'RheoHealthIndicator (import TerminusModule too)',
    );
    try {
      this.service = this.moduleRef.get(terminus.HealthIndicatorService, { strict: false });
    } catch {
      // TerminusModule not imported: the service is stateless, a private one is equivalent.
      this.service = new terminus.HealthIndicatorService();
    }
    return this.service!;
  }

  /** Check the instance; never throws for an unhealthy store (Terminus turns `down` into a 503). */
  async isHealthy<K extends string>(key: K, options: RheoHealthOptions = {}): Promise<RheoHealthResult<K>> {
    checkKeys('options', checkObject('options', options), OPTION_KEYS);
    if (options.maxLag !== undefined) checkInt('maxLag', options.maxLag, 0);
    if (options.maxOldestUnackedMs !== undefined) checkInt('maxOldestUnackedMs', options.maxOldestUnackedMs, 0);
    if (options.maxDeadLetters !== undefined) checkInt('maxDeadLetters', options.maxDeadLetters, 0);
    if (options.deadLetterWindowMs !== undefined) {
      checkInt('deadLetterWindowMs', options.deadLetterWindowMs, 1);
      // A window alone would limit nothing: say so rather than report up whatever dies.
      if (options.maxDeadLetters === undefined) throw RheoError.invalid('deadLetterWindowMs', 'needs maxDeadLetters (the count it limits)');
    }
    if (options.checkLagWhilePaused !== undefined && typeof options.checkLagWhilePaused !== 'boolean')
      throw RheoError.invalid('checkLagWhilePaused', 'must be a boolean');
    if (options.groups !== undefined && !Array.isArray(options.groups))
      throw RheoError.invalid('groups', "must be an array of 'stream/group' or { stream, group }");
    const session = this.indicators().check(key);
    const result = (data: Record<string, unknown>, up: boolean) => (up ? session.up(data) : session.down(data)) as RheoHealthResult<K>;
    const rheo = this.instance.rheo;
    try {
      await rheo.ping();
    } catch (err) {
      return result({ message: `backend unreachable: ${toRheoError(err, 'backend_unavailable').message}` }, false);
    }
    const local = new Map(this.server.consumers().map((c) => [consumerKey(c.stream, c.group), c]));
    const groups: Record<string, RheoGroupHealth> = {};
    const failing: string[] = [];
    for (const { stream, group } of await this.targets(options.groups, [...local.values()])) {
      const name = consumerKey(stream, group);
      try {
        const info = await rheo.groupInfo(stream, group);
        const figures: RheoGroupHealth = {
          lag: info.lag.lag,
          inflight: info.inflight,
          deadLetters: info.deadLetters,
          oldestUnsettledAgeMs: info.oldestUnsettledAgeMs,
        };
        const consumer = local.get(name);
        if (consumer) figures.consumer = consumer.state;
        if (consumer?.renewError) figures.renewals = `failing: ${consumer.renewError.message}`;
        if (info.warnings && info.warnings.length > 0) figures.warnings = info.warnings;
        const pause = info.paused;
        if (pause) {
          const until = pause.until ? pause.until.toISOString() : null;
          figures.paused = { since: pause.pausedAt.toISOString(), until, reason: pause.reason, by: pause.by };
        }
        // A paused group falls behind on purpose: its lag and age fail the check only when asked.
        const lagChecked = !pause || options.checkLagWhilePaused === true;
        const window = options.deadLetterWindowMs;
        if (window !== undefined) {
          // Never more than the total: a group with none costs no second query.
          const since = new Date(rheo.backend.clock.now() - window);
          figures.deadLettersInWindow = figures.deadLetters === 0 ? 0 : await rheo.countDeadLetters(stream, group, { since });
        }
        groups[name] = figures;
        const whilePaused = pause ? ' (paused)' : '';
        if (lagChecked && options.maxLag !== undefined && figures.lag > options.maxLag)
          failing.push(`${name}: lag ${figures.lag} > ${options.maxLag}${whilePaused}`);
        const dead = deadLettersOver(figures, options);
        if (dead) failing.push(`${name}: ${dead}`);
        const age = figures.oldestUnsettledAgeMs;
        if (lagChecked && options.maxOldestUnackedMs !== undefined && age !== null && age > options.maxOldestUnackedMs) {
          failing.push(`${name}: oldest unsettled event ${age} ms old > ${options.maxOldestUnackedMs} ms${whilePaused}`);
        }
        if (consumer?.state === 'backing_off')
          failing.push(`${name}: consumer backing off: ${consumer.lastError?.message ?? 'fetch failed'}`);
        // Leases that cannot be renewed expire under their handlers: events get handled twice.
        if (consumer?.renewError) failing.push(`${name}: lease renewals failing: ${consumer.renewError.message}`);
      } catch (err) {
        failing.push(`${name}: ${toRheoError(err).message}`);
      }
    }
    return failing.length === 0 ? result({ groups }, true) : result({ groups, failing }, false);
  }

  private async targets(
    given: RheoHealthGroup[] | undefined,
    local: Array<{ stream: string; group: string }>,
  ): Promise<Array<{ stream: string; group: string }>> {
    if (given !== undefined) {
      return given.map((g, i) => {
        if (typeof g === 'object' && g !== null) {
          checkKeys(`groups[${i}]`, g, GROUP_KEYS);
          return { stream: g.stream, group: g.group };
        }
        const cut = typeof g === 'string' ? g.lastIndexOf('/') : -1;
        if (cut <= 0 || cut === g.length - 1) throw RheoError.invalid(`groups[${i}]`, "must be 'stream/group' or { stream, group }");
        return { stream: g.slice(0, cut), group: g.slice(cut + 1) };
      });
    }
    if (local.length > 0) return local;
    const all: Array<{ stream: string; group: string }> = [];
    for (const s of await this.instance.rheo.listStreams()) {
      for (const g of await this.instance.rheo.listGroups(s.name)) all.push({ stream: s.name, group: g.group });
    }
    return all;
  }
}

/** Why the group's dead letters are over `maxDeadLetters`, or null when they are not (or no limit is set). */
function deadLettersOver(figures: RheoGroupHealth, options: RheoHealthOptions): string | null {
  const max = options.maxDeadLetters;
  if (max === undefined) return null;
  if (options.deadLetterWindowMs === undefined) return figures.deadLetters > max ? `dead letters ${figures.deadLetters} > ${max}` : null;
  const recent = figures.deadLettersInWindow ?? 0;
  return recent > max ? `dead letters in the last ${options.deadLetterWindowMs} ms ${recent} > ${max}` : null;
}
