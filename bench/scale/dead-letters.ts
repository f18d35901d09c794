// Dead letters made through the API, as a poison flood would make them: events
// appended, fetched in big batches and rejected in one settleMany per batch, by
// one group; a second group of the same stream acks the same events, so the two
// differ by their dead letters alone (both have the same settled history).
import type { Rheo } from '../../lib';
import { rate, timeIt } from '../harness';
import { load } from './load';
import { progress } from './report';

const FETCH = 1000;

/** Fetch and settle `n` waiting events of `group` as `kind`, 1000 a call; progress on stderr every ~10%. */
async function settleAll(rheo: Rheo, stream: string, group: string, n: number, kind: 'ack' | 'reject'): Promise<number> {
  const step = Math.max(FETCH, Math.ceil(n / 10 / FETCH) * FETCH);
  const { ms } = await timeIt(async () => {
    let done = 0;
    while (done < n) {
      const leases = await rheo.fetch(stream, group, { limit: Math.min(FETCH, n - done), leaseMs: 300_000 });
      if (leases.length === 0) throw new Error(`${group}: no event to ${kind} after ${done} of ${n}`);
      const results = await rheo.settleMany(leases.map((lease) => ({ kind, lease, reason: 'bench: poison' })));
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
      const before = done;
      done += leases.length;
      if (Math.floor(done / step) > Math.floor(before / step) && done < n) {
        progress(`${group}: ${done.toLocaleString('en-US')} / ${n.toLocaleString('en-US')} ${kind === 'ack' ? 'acked' : 'dead-lettered'}`);
      }
    }
  });
  return ms;
}

/**
 * Append `n` events to `stream`; `dirty` dead-letters all of them, `clean` acks
 * them (both caught up before). Returns the reject phase's time.
 */
export async function makeDeadLetters(
  rheo: Rheo,
  stream: string,
  groups: { dirty: string; clean: string },
  n: number,
): Promise<{ rejectMs: number; rejectPerSec: number; ackMs: number }> {
  const loaded = await load(rheo, stream, n, { label: 'dead letters, appending' });
  progress(`dead letters: ${n.toLocaleString('en-US')} appended in ${(loaded.ms / 1000).toFixed(1)} s`);
  const rejectMs = await settleAll(rheo, stream, groups.dirty, n, 'reject');
  const ackMs = await settleAll(rheo, stream, groups.clean, n, 'ack');
  return { rejectMs: Math.round(rejectMs), rejectPerSec: rate(n, rejectMs), ackMs: Math.round(ackMs) };
}
