// PostgreSQL only: our appendBatch next to pg-boss's insert, same rows per call
// (1000), same payloads, same database, in the same run.
import type { Rheo } from '../../lib';
import { benchPgBoss } from '../peers/pg-boss';
import { load } from './load';

export async function appendVsPgBoss(rheo: Rheo, url: string, n: number): Promise<{ ours: number; pgBoss: number }> {
  await rheo.createStream('peer-append');
  const ours = await load(rheo, 'peer-append', n);
  // benchPgBoss inserts in batches of 1000 too; it also drains its queue (not reported here).
  const boss = await benchPgBoss(url, n);
  return { ours: ours.eventsPerSec, pgBoss: boss.append };
}
