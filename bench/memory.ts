// The memory backend: the ceiling of the library's own overhead (no I/O).
import { Rheo } from '../lib';
import { MemoryBackend } from '../lib/backends/memory/memory-backend';
import { benchAppend, benchConsume, emit, emitLatency, printTable } from './harness';

// RHEO_BENCH_N: a smaller run to check the bench prints (the figures are for the default).
const N = Number(process.env.RHEO_BENCH_N ?? 100_000);
const BATCH = 1000;

/** append N, consume N through a Consumer (maxDemand 100, concurrency 16), then latency. */
export async function main(): Promise<void> {
  const rheo = new Rheo(new MemoryBackend());
  await rheo.createStream('bench', { partitions: 4 });
  await rheo.createGroup('bench', 'consumers');

  const append = await benchAppend(rheo, 'bench', N, BATCH);
  emit({ backend: 'memory', op: 'append', events: N, eventsPerSec: append.eventsPerSec });

  const consume = await benchConsume(rheo, 'bench', 'consumers', N, { maxDemand: 100, concurrency: 16 });
  emit({ backend: 'memory', op: 'consume', events: N, eventsPerSec: consume.eventsPerSec });

  await emitLatency(rheo, 'memory', { backlog: Math.min(N, 20_000), batch: BATCH, partitions: 4 });

  printTable();
  await rheo.close();
}
