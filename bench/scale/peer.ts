// PostgreSQL only: our appendBatch next to pg-boss's insert, same rows per call
// (1000), same payloads, same database, in the same run. One reading of each is
// noise on a shared machine (single runs gave 1.2x to 2.1x), so the two are
// measured in turns, round after round, and each side's figure is its median.
import type { Rheo } from '../../lib';
import { benchPgBoss } from '../peers/pg-boss';
import { load } from './load';

const ROUNDS = 3;

export async function appendVsPgBoss(
  rheo: Rheo,
  url: string,
  n: number,
): Promise<{ ours: number; pgBoss: number; oursRounds: number[]; pgBossRounds: number[] }> {
  const oursRounds: number[] = [];
  const pgBossRounds: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    await rheo.createStream(`peer-append-${round}`);
    oursRounds.push((await load(rheo, `peer-append-${round}`, n)).eventsPerSec);
    // benchPgBoss inserts in batches of 1000 too, into a schema of its own; it also drains its queue (not reported here).
    pgBossRounds.push((await benchPgBoss(url, n)).append);
  }
  return { ours: median(oursRounds), pgBoss: median(pgBossRounds), oursRounds, pgBossRounds };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
