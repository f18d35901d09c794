import { toRheoError } from '../core/errors';
import type { Rheo } from '../core/rheo';
import type { GroupConfig, GroupOptions } from '../core/types';
import { type BroadcastGroupSetting, BroadcastMember } from './broadcast';

/** Where memberships report what their heartbeats find (Nest's `Logger` is one). */
export interface MembershipLogger {
  log(message: string): void;
  warn(message: string): void;
}

/** One broadcast consumer to join: who it is (for the log) and its broadcast group's settings. */
export interface BroadcastJoin extends Pick<GroupOptions, BroadcastGroupSetting> {
  /** The consumer's `'stream/group'`, by which it is left again. */
  key: string;
  handlerName: string;
  stream: string;
  /** The broadcast group's name; the member consumes `<group>.<instance id>`. */
  group: string;
  ttlMs: number;
}

/** What a join gives: the instance's own group, which the consumer runs from then on, and that group as stored. */
export interface BroadcastJoined {
  group: string;
  config: GroupConfig;
}

/**
 * The broadcast memberships of one process's consumers (docs/adr/031): each
 * broadcast consumer joins with a group of its own before its runtime Consumer
 * starts, and leaves (its group deleted) after every consumer drained. What the
 * heartbeats find goes to the log.
 */
export class BroadcastMemberships {
  private readonly members = new Map<string, BroadcastMember>();

  constructor(
    private readonly rheo: Rheo,
    private readonly logger: MembershipLogger,
  ) {}

  /** Join `consumer`'s broadcast group; a failure to join rejects with the store's error, left for the caller to blame. */
  async join(consumer: BroadcastJoin): Promise<BroadcastJoined> {
    const { stream, group } = consumer;
    const label = `${consumer.handlerName} (${stream}/${group}, broadcast)`;
    let failing = false;
    const member = new BroadcastMember(this.rheo, {
      stream,
      group,
      ttlMs: consumer.ttlMs,
      maxAttempts: consumer.maxAttempts,
      retry: consumer.retry,
      ordering: consumer.ordering,
      keyConcurrency: consumer.keyConcurrency,
      events: {
        rejoined: (g) =>
          this.logger.warn(
            `${label}: group ${g} was deleted while this instance's heartbeat lapsed (longer than broadcastTtlMs); ` +
              'created again at the end of the stream: events appended meanwhile were not received by this instance',
          ),
        collected: (g) => this.logger.log(`${label}: deleted group ${g} of an instance that stopped without leaving`),
        error: (error, during) => {
          // One warning per burst of heartbeat failures (one every third of the ttl); a collection runs once per ttl.
          if (during === 'heartbeat' && failing) return;
          if (during === 'heartbeat') failing = true;
          this.logger.warn(`${label}: broadcast ${during} failed, retrying: ${error.message}`);
        },
        recovered: () => {
          failing = false;
          this.logger.log(`${label}: broadcast heartbeats succeed again`);
        },
      },
    });
    const config = await member.join();
    this.members.set(consumer.key, member);
    this.logger.log(`${label}: joined as group ${member.group}`);
    return { group: member.group, config };
  }

  /** Leave every joined group (after the drain); never throws: a group left behind is collected by the other instances. */
  async leaveAll(): Promise<void> {
    const all = [...this.members.entries()];
    this.members.clear();
    await Promise.all(
      all.map(async ([key, member]) => {
        try {
          await member.leave();
          this.logger.log(`${key} (broadcast): left, group ${member.group} deleted`);
        } catch (err) {
          this.logger.warn(
            `${key} (broadcast): could not delete group ${member.group}: ${toRheoError(err).message}; ` +
              `the other instances delete it ${member.ttlMs} ms after its last heartbeat`,
          );
        }
      }),
    );
  }
}
