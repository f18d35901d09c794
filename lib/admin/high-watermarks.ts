// A stream's high watermarks (last sequence appended, per partition) by the
// cheapest correct read. The facade has no "stream size" operation; a group's
// lag carries the high watermarks of every partition in one backend call, and
// it counts trimmed events too. A stream without groups falls back to its last
// event per partition (a descending query, limit 1): one small indexed read each.
// Only a stream without groups whose every event was trimmed then reads 0
// (docs/adr/026-admin-service-and-cli.md).
import type { Rheo } from '../core/rheo';
import type { Lag, StreamInfo } from '../core/types';

/** Per partition, from a lag the caller already read. */
export function fromLag(lag: Lag, partitions: number): number[] {
  const hwm = new Array<number>(partitions).fill(0);
  for (const p of lag.partitions) hwm[p.partition] = p.highWatermark;
  return hwm;
}

/** Per partition: one group's lag when the stream has a group (`group`), else the last event of each partition. */
export async function readHighWatermarks(rheo: Rheo, info: StreamInfo, group: string | undefined): Promise<number[]> {
  if (group !== undefined) return fromLag(await rheo.lag(info.name, group), info.partitions);
  return Promise.all(
    Array.from({ length: info.partitions }, async (_, partition) => {
      const [last] = await rheo.query({ stream: info.name, where: { partition }, order: 'desc', limit: 1 });
      return last ? last.sequence : 0;
    }),
  );
}
