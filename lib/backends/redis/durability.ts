import { RheoError } from '../../core/errors';
import type { NewEvent } from '../backend';
import { isCluster, nodeKey } from './cluster';
import type { AppendOutcome } from './codec';
import type { RedisContext } from './context';
import type { RedisCommands, RedisPipelineResult } from './external';
import { streamNode } from './lifecycle';
import type { RedisDurability } from './options';

/**
 * `durable: true` is what the backend can be, not what every server is: Redis
 * acknowledges writes it can still lose (appendonly no: everything since the
 * last snapshot goes on a restart) and may evict keys (any maxmemory-policy but
 * noeviction). Read both once at init; what is wrong goes into one process
 * warning and into every groupInfo's `warnings` (`ctx.durabilityWarnings`). A
 * server that refuses CONFIG (managed services, ACLs) is not an error: durability
 * is then unverified, and said so.
 */
export async function checkDurability(ctx: RedisContext, client: RedisCommands): Promise<void> {
  // On a cluster every master is asked (each keeps its own streams); the messages name the node.
  const servers: Array<[RedisCommands, string]> = isCluster(client)
    ? client.nodes('master').map((n) => [n, `the Redis node ${nodeKey(n)}`])
    : [[client, 'the Redis server']];
  const found: string[] = [];
  for (const [server, name] of servers) {
    try {
      const appendonly = await configValue(server, 'appendonly');
      const policy = await configValue(server, 'maxmemory-policy');
      if (appendonly !== 'yes') {
        found.push(
          `${name} runs with appendonly ${appendonly}: writes it acknowledged since its last snapshot (events, acks, dead letters) are lost if it restarts or crashes; set appendonly yes`,
        );
      }
      if (policy !== 'noeviction') {
        found.push(
          `${name}'s maxmemory-policy is ${policy}: under memory pressure it may evict this backend's keys, losing events and group state; set maxmemory-policy noeviction`,
        );
      }
    } catch (err) {
      found.push(
        `durability could not be verified${servers.length > 1 ? ` on ${name}` : ''}: CONFIG GET is not available on this connection (${err instanceof Error ? err.message : String(err)}); make sure the server runs with appendonly yes and maxmemory-policy noeviction`,
      );
    }
  }
  ctx.durabilityWarnings = found;
  if (found.length > 0 && !ctx.durabilityWarned) {
    ctx.durabilityWarned = true;
    process.emitWarning(`nestjs-rheo redis backend (prefix "${ctx.prefix}") may lose acknowledged data: ${found.join('; ')}`, {
      type: 'RheoWarning',
      code: 'RHEO_REDIS_NOT_DURABLE',
    });
  }
}

/** One CONFIG GET value; ioredis answers `[name, value]` (RESP2 and RESP3 alike), or a map. */
async function configValue(client: RedisCommands, name: string): Promise<string> {
  const reply = (await client.config('GET', name)) as unknown;
  const value = Array.isArray(reply) ? reply[1] : (reply as Record<string, unknown> | null)?.[name];
  if (value === undefined || value === null) throw new Error(`CONFIG GET ${name} answered nothing`);
  return String(value);
}

/**
 * `durability`: return only once `replicas` replicas have the append. WAIT counts the
 * replicas that acknowledged everything the master had when this connection last
 * wrote, so it goes on the connection that ran the append, right after it: on a
 * cluster, the cluster's own connection to the node that owns the stream's slot
 * (streamNode), with no redirection (a WAIT that followed a MOVED or a reconnection
 * elsewhere would count another connection's writes). The HGET of the first event's
 * id in front of it tells whether that node still holds the event (a failover between
 * the append and the WAIT could answer from a master that does not). Anything short
 * of N confirmations throws `ambiguous`: the master applied the append, but it may be lost.
 */
export async function confirmReplicas(
  ctx: RedisContext,
  stream: string,
  first: NewEvent,
  stored: AppendOutcome,
  { replicas, timeoutMs }: Required<RedisDurability>,
): Promise<void> {
  const unconfirmed = (why: string, cause?: unknown) =>
    new RheoError(
      'ambiguous',
      `redis: the append to stream "${stream}" ${why}; it may have been applied, and an append no replica has is lost if its master fails. Appending the same events again (same ids) is safe: appends are idempotent by event id`,
      cause === undefined ? {} : { cause },
    );
  const expected = typeof stored === 'number' ? `${first.partition}:${stored}` : Array.isArray(stored) ? stored[0] : stored;
  let rows: RedisPipelineResult[];
  try {
    const p = streamNode(ctx, stream).pipeline();
    p.hget(ctx.keys(stream).ids, first.id);
    p.wait(replicas, timeoutMs);
    rows = (await p.exec()) ?? [];
  } catch (err) {
    throw unconfirmed(`was not confirmed by ${replicas} replica(s) (${ctx.mapError(err, 'write').message})`, err);
  }
  const [[readErr, ref] = [null, null], [waitErr, acked] = [null, null]] = rows;
  const failed = readErr ?? waitErr;
  if (failed) throw unconfirmed(`was not confirmed by ${replicas} replica(s) (${ctx.mapError(failed, 'write').message})`, failed);
  if (ref !== expected) {
    throw unconfirmed(
      `is gone from the master of its slot right after it was written (a failover lost it, or a trim took it at once): event "${first.id}" is not where the append put it`,
    );
  }
  const confirmed = Number(acked);
  if (!(confirmed >= replicas)) {
    throw unconfirmed(
      `was written on the master, but only ${confirmed} of ${replicas} replica(s) confirmed it within ${timeoutMs} ms (Redis WAIT)`,
    );
  }
}
