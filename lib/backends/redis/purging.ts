import type { GroupKeys, StreamKeys } from './keys';
import type { RedisOps } from './ops';
import { Pace } from './pace';

/**
 * Dead letters one purge step may delete (or index, for data written before layout
 * 2): about 5 µs each on the server (four sorted-set and hash deletions), so a step
 * takes about half a millisecond, like a trim slice.
 */
export const PURGE_SLICE = 100;

/**
 * Purge a group's dead letters (scripts/purge.ts). All of them: one call that
 * UNLINKs the three keys (freed in the background). Before a time: steps of at most
 * PURGE_SLICE through the time index, oldest first, each its own short script call,
 * paced like a trim (pace.ts); a group with dead letters from before layout 2 has them indexed first, in HSCAN
 * steps of the same size (once: every write since keeps the index whole).
 */
export async function runPurge(
  ops: RedisOps,
  k: StreamKeys,
  g: GroupKeys,
  on: { stream: string; group: string },
  before: Date | null,
): Promise<number> {
  const keys = [k.meta, g.cfg, g.dead, g.deadOrder, g.deadTimes];
  if (before === null) return Number(((await ops.script('write', 'purge', keys, ['all'], on)) as unknown[])[0]);
  let total = 0;
  let indexed = false;
  const pace = new Pace();
  for (;;) {
    const out = (await ops.script('write', 'purge', keys, ['before', before.getTime(), PURGE_SLICE, indexed ? 1 : 0], on)) as unknown[];
    if (out[0] === 'index') {
      await indexDeadTimes(ops, keys, on, pace);
      // Indexed once: whatever a concurrent writer of the old layout adds, this purge goes on.
      indexed = true;
      continue;
    }
    total += Number(out[0]);
    if (Number(out[1]) < PURGE_SLICE) return total;
    await pace.rest();
  }
}

/**
 * Add a group's dead letters written before layout 2 to its time index `deadt`, in
 * HSCAN steps of PURGE_SLICE (the purge script's 'index' mode), paced. `keys` are the
 * purge script's: meta, cfg, dead, deadz, deadt.
 */
export async function indexDeadTimes(
  ops: RedisOps,
  keys: string[],
  on: { stream: string; group: string },
  pace: Pace = new Pace(),
): Promise<void> {
  let cursor = '0';
  do {
    cursor = String(((await ops.script('write', 'purge', keys, ['index', cursor, PURGE_SLICE], on)) as unknown[])[0]);
    await pace.rest();
  } while (cursor !== '0');
}
