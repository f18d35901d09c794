// What a RheoServer does before it starts a consumer: find the @RheoConsumer
// handlers bound to it, resolve and check their options, and check their streams,
// so that a bad setup fails at startup naming the handler, before anything is touched.
import type { Logger } from '@nestjs/common';
import type { MessageHandler } from '@nestjs/microservices';
import { RheoError } from '../core/errors';
import { checkFlowSupported } from '../core/flow';
import type { Rheo } from '../core/rheo';
import { checkTransactional } from '../runtime/transactional';
import { RHEO_CONSUMER_EXTRAS } from './constants';
import { blameSource, prefixed, resolveConsumer, type ResolvedConsumer } from './consumer-options';
import type { RheoConsumerMarker } from './rheo-consumer.decorator';
import type { RheoInstance } from './rheo-instance';

/**
 * Read and validate every consumer bound to a server; all problems at once, nothing
 * touched yet. Each one's Nest handler goes into `handlers`, by `'stream/group'`.
 */
export function collectConsumers(
  messageHandlers: ReadonlyMap<string, MessageHandler>,
  instance: RheoInstance,
  logger: Logger,
  handlers: Map<string, MessageHandler>,
): ResolvedConsumer[] {
  const consumers: ResolvedConsumer[] = [];
  const problems: RheoError[] = [];
  for (const [pattern, handler] of messageHandlers) {
    const marker = handler.extras?.[RHEO_CONSUMER_EXTRAS] as RheoConsumerMarker | undefined;
    if (!marker) {
      logger.warn(`Ignoring handler for pattern ${pattern}: not a @RheoConsumer (give other transports' handlers their transportId)`);
      continue;
    }
    try {
      if (handler.next) {
        const other =
          ((handler.next as MessageHandler).extras?.[RHEO_CONSUMER_EXTRAS] as RheoConsumerMarker | undefined)?.handlerName ??
          'another handler';
        throw new RheoError(
          'invalid_argument',
          `${other} already consumes ${marker.options.stream}/${marker.options.group}: one handler per (stream, group); use another group name`,
          {
            field: 'group',
          },
        );
      }
      const consumer = resolveConsumer(marker.handlerName, marker.options, instance.options);
      // Refused before anything is touched: a backend that cannot ack inside the handler's transaction,
      // or that does not enforce the group's flow limits.
      if (consumer.run.transactional) checkTransactional(instance.rheo);
      checkFlowBackend(instance.rheo, consumer);
      consumers.push(consumer);
      handlers.set(consumer.key, handler);
    } catch (err) {
      problems.push(err instanceof RheoError && err.message.startsWith(`${marker.handlerName}:`) ? err : prefixed(marker.handlerName, err));
    }
  }
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw new RheoError('invalid_argument', problems.map((p) => p.message).join('\n'), { field: problems[0].field });
  return consumers;
}

/** The consumer's flow limits, refused (blaming the option they came from) on a backend that does not enforce them. */
function checkFlowBackend(rheo: Rheo, c: ResolvedConsumer): void {
  const g = c.group;
  const limits = { keyConcurrency: g.keyConcurrency ?? null, groupConcurrency: g.groupConcurrency ?? null, rateLimit: g.rateLimit ?? null };
  try {
    checkFlowSupported(rheo.backend, { ordering: g.ordering ?? 'none', ...limits });
  } catch (err) {
    throw blameSource(c.sources, err);
  }
}

/** A `consumers` key that matches no handler is most likely a typo; it may also belong to another app, so warn only. */
export function warnUnmatchedConfiguration(consumers: ResolvedConsumer[], instance: RheoInstance, logger: Logger): void {
  const keys = new Set(consumers.map((c) => c.key));
  for (const key of Object.keys(instance.options.consumers ?? {})) {
    if (!keys.has(key)) logger.warn(`consumers["${key}"] matches no @RheoConsumer of instance "${instance.name}" in this app; ignored`);
  }
}

/** Every consumer's stream exists and has the partitions it names. */
export async function checkStreams(rheo: Rheo, consumers: ResolvedConsumer[]): Promise<void> {
  const streams = new Map((await rheo.listStreams()).map((s) => [s.name, s]));
  for (const c of consumers) {
    const info = streams.get(c.run.stream);
    if (!info) {
      throw new RheoError(
        'stream_not_found',
        `${c.handlerName}: stream "${c.run.stream}" does not exist; declare it in RheoModule.forRoot({ streams: [{ name: '${c.run.stream}', partitions }] }) or create it first`,
      );
    }
    for (const p of c.run.partitions ?? []) {
      if (p >= info.partitions) {
        throw new RheoError(
          'invalid_argument',
          `${c.handlerName}: partitions: stream "${info.name}" has ${info.partitions} partition(s), no partition ${p}`,
          {
            field: 'partitions',
          },
        );
      }
    }
  }
}
