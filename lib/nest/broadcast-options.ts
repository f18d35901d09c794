import { RheoError } from '../core/errors';
import { MAX_DURATION_MS, MAX_NAME_LENGTH } from '../core/limits';
import { checkInt } from '../core/validate';
import { BROADCAST_SUFFIX_LENGTH, DEFAULT_BROADCAST_TTL_MS, MIN_BROADCAST_TTL_MS } from '../runtime/broadcast';

/** A broadcast consumer's resolved settings. */
export interface ResolvedBroadcast {
  /** How long an instance's group outlives its last heartbeat, ms. */
  ttlMs: number;
}

/** What {@link resolveBroadcast} reads: the decorator's flag, the merged settings, and where each came from. */
interface BroadcastInput {
  broadcast: unknown;
  group: string;
  start: unknown;
  broadcastTtlMs: unknown;
  /** `'defaults'`, `'consumers["s/g"]'`, or undefined for the decorator. */
  startSource: string | undefined;
  ttlSource: string | undefined;
}

/**
 * Check a consumer's broadcast options (docs/adr/031). The module's `defaults`
 * apply to every consumer, so their `start` and `broadcastTtlMs` are ignored
 * where they do not fit (a broadcast consumer always starts at the end; an
 * ordinary one has no ttl); the same values set for this consumer (on the
 * decorator or in `consumers["stream/group"]`) are refused instead, naming the
 * field. Returns undefined for an ordinary consumer.
 */
export function resolveBroadcast(o: BroadcastInput): ResolvedBroadcast | undefined {
  if (o.broadcast !== undefined && typeof o.broadcast !== 'boolean') throw RheoError.invalid('broadcast', 'must be true or false');
  const own = (source: string | undefined) => source !== 'defaults';
  if (!o.broadcast) {
    if (o.broadcastTtlMs !== undefined && own(o.ttlSource))
      throw RheoError.invalid('broadcastTtlMs', 'applies to broadcast consumers only (broadcast: true)');
    return undefined;
  }
  if (o.start !== undefined && o.start !== 'end' && own(o.startSource))
    throw RheoError.invalid(
      'start',
      "must be 'end' or absent for a broadcast consumer: each instance's group starts at the end of the stream",
    );
  if (o.group.length + BROADCAST_SUFFIX_LENGTH > MAX_NAME_LENGTH)
    throw RheoError.invalid(
      'group',
      `must be at most ${MAX_NAME_LENGTH - BROADCAST_SUFFIX_LENGTH} characters for a broadcast consumer (each instance adds .<instance id>)`,
    );
  const ttlMs =
    o.broadcastTtlMs === undefined
      ? DEFAULT_BROADCAST_TTL_MS
      : checkInt('broadcastTtlMs', o.broadcastTtlMs, MIN_BROADCAST_TTL_MS, MAX_DURATION_MS);
  return { ttlMs };
}
