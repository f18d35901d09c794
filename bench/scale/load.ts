// Filling streams: appendBatch in batches, the way a producer backfills.
import type { AppendInput, JsonValue, Rheo } from '../../lib';
import { payload, rate, timeIt } from '../harness';
import { progress } from './report';

/** Batch size of every load: the largest a producer would typically send, well under MAX_BATCH. */
export const LOAD_BATCH = 1000;

/**
 * The big stream's payload: the harness's ~100-byte quote plus `n` and a
 * `tenant` that matches 1 event in 1000, for the filtered query.
 */
export function tenantPayload(i: number): JsonValue {
  return { n: i, tenant: `t${i % 1000}`, ...(payload(i) as Record<string, JsonValue>) };
}

/** Append events `first .. first + n - 1` to `stream`; progress on stderr every ~10%. */
export async function load(
  rheo: Rheo,
  stream: string,
  n: number,
  options: { first?: number; payloadOf?: (i: number) => JsonValue; label?: string } = {},
): Promise<{ ms: number; eventsPerSec: number }> {
  const first = options.first ?? 0;
  const payloadOf = options.payloadOf ?? payload;
  const step = Math.max(LOAD_BATCH, Math.ceil(n / 10 / LOAD_BATCH) * LOAD_BATCH);
  const { ms } = await timeIt(async () => {
    for (let done = 0; done < n; done += LOAD_BATCH) {
      const batch: AppendInput[] = [];
      for (let i = first + done; i < first + Math.min(n, done + LOAD_BATCH); i++) {
        batch.push({ type: 'quote', key: `k${i % 64}`, payload: payloadOf(i) });
      }
      await rheo.appendBatch(stream, batch);
      const after = Math.min(n, done + LOAD_BATCH);
      if (options.label && after % step === 0 && after < n)
        progress(`${options.label}: ${after.toLocaleString('en-US')} / ${n.toLocaleString('en-US')}`);
    }
  });
  return { ms, eventsPerSec: rate(n, ms) };
}
