// The memory backend: the ceiling of the library's own overhead (no I/O).
import { MemoryBackend, Rheo } from '../lib';
import { benchAppend, benchConsume, benchLatency, emit, printTable } from './harness';

const N = 100_000;
const BATCH = 1000;

/** append N, consume N through a Group (maxDemand 100, concurrency 16), then latency. */
export async function main(): Promise<void> {
  const rheo = new Rheo(new MemoryBackend());
  await rheo.createStream('bench', { partitions: 4 });
  await rheo.createGroup('bench', 'consumers');

  const append = await benchAppend(rheo, 'bench', N, BATCH);
  emit({ backend: 'memory', op: 'append', events: N, eventsPerSec: append.eventsPerSec });

  const consume = await benchConsume(rheo, 'bench', 'consumers', N, { maxDemand: 100, concurrency: 16 });
  emit({ backend: 'memory', op: 'consume', events: N, eventsPerSec: consume.eventsPerSec });

  await rheo.createStream('latency');
  await rheo.createGroup('latency', 'consumers');
  const samples = 200;
  const latency = await benchLatency(rheo, 'latency', 'consumers', samples, { pollMs: 1000 });
  emit({ backend: 'memory', op: 'latency', events: samples, p50Ms: latency.p50Ms, p99Ms: latency.p99Ms });

  printTable();
  await rheo.close();
}
