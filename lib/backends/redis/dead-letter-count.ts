import type { GroupKeys, StreamKeys } from './keys';
import type { RedisOps } from './ops';
import { indexDeadTimes } from './purging';

/**
 * Count a group's dead letters (scripts/count-dead-letters.ts): all of them, or those
 * dead-lettered at or after `since`, by the time index `deadt`. A group with dead
 * letters from before layout 2 has them indexed first (purging.ts), once: every
 * write since keeps the index whole, so later counts are one constant-time call.
 */
export async function runCountDeadLetters(
  ops: RedisOps,
  k: StreamKeys,
  g: GroupKeys,
  on: { stream: string; group: string },
  since: Date | null,
): Promise<number> {
  const keys = [k.meta, g.cfg, g.dead, g.deadTimes];
  const count = async (indexed: boolean) =>
    ((await ops.script('read', 'countDeadLetters', keys, [since === null ? '' : since.getTime(), indexed ? 1 : 0], on)) as unknown[])[0];
  const first = await count(false);
  if (first !== 'index') return Number(first);
  await indexDeadTimes(ops, [k.meta, g.cfg, g.dead, g.deadOrder, g.deadTimes], on);
  // Indexed once: whatever a concurrent writer of the old layout adds, count what the index holds.
  return Number(await count(true));
}
