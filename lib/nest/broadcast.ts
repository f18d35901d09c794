import type { Logger } from '@nestjs/common';
import { toRheoError } from '../core/errors';
import type { Rheo } from '../core/rheo';
import type { GroupConfig } from '../core/types';
import { BroadcastMember } from '../runtime/broadcast';
import type { ResolvedConsumer } from './consumer-options';
import { blameSource, prefixed } from './consumer-options';

/**
 * The broadcast memberships of one transport (docs/adr/031): each broadcast
 * consumer joins with a group of its own before its runtime Consumer starts, and
 * leaves (its group deleted) after every consumer drained. What the heartbeats
 * find goes to the log.
 */
export class BroadcastMemberships {
  private readonly members = new Map<string, BroadcastMember>();

  constructor(
    private readonly rheo: Rheo,
    private readonly logger: Logger,
  ) {}

  /**
   * Join `consumer`'s broadcast group and point the consumer at its instance's
   * group (`run.group`), which is what it consumes, reports and is checked by
   * health from here on. Errors name the handler.
   */
  async join(consumer: ResolvedConsumer): Promise<GroupConfig> {
    const { stream, group } = consumer.run;
    const label = `${consumer.handlerName} (${stream}/${group}, broadcast)`;
    let failing = false;
    const member = new BroadcastMember(this.rheo, {
      stream,
      group,
      ttlMs: consumer.broadcast!.ttlMs,
      maxAttempts: consumer.group.maxAttempts,
      retry: consumer.group.retry,
      ordering: consumer.group.ordering,
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
    let config: GroupConfig;
    try {
      config = await member.join();
    } catch (err) {
      throw prefixed(consumer.handlerName, blameSource(consumer.sources, err));
    }
    this.members.set(consumer.key, member);
    // From here on the consumer runs its instance's group.
    consumer.run.group = member.group;
    this.logger.log(`${label}: joined as group ${member.group}`);
    return config;
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
