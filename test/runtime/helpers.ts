import { ManualClock, Rheo } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import type { GroupOptions } from '../../lib';
import { Consumer, type ConsumerBatchHandler, type ConsumerHandler, type GroupRunOptions } from '../../lib';
import type { BatchOptions } from '../../lib/runtime/options';
import { FaultyBackend } from '../support/faulty-backend';

let counter = 0;

/** A unique name per call, so tests never share a stream. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

/** A memory backend on a ManualClock, wrapped for faults, behind the facade; one stream + group ready. */
export async function setup(options: { partitions?: number; group?: GroupOptions } = {}) {
  const clock = new ManualClock();
  const memory = new MemoryBackend({ clock });
  const backend = new FaultyBackend(memory);
  const rheo = new Rheo(backend);
  const stream = unique('s');
  const group = unique('g');
  await rheo.createStream(stream, { partitions: options.partitions ?? 1 });
  await rheo.createGroup(stream, group, options.group ?? {});
  return { clock, memory, backend, rheo, stream, group };
}

const started: Consumer[] = [];

/** Build and start a Consumer; `drainAll` stops every one a test left running. */
export function startConsumer(rheo: Rheo, options: GroupRunOptions & { batch?: undefined }, handler: ConsumerHandler): Consumer {
  const g = new Consumer(rheo, options, handler);
  started.push(g);
  g.start();
  return g;
}

/** Build and start a batch Consumer; drained by `drainAll` too. */
export function startBatchConsumer(
  rheo: Rheo,
  options: GroupRunOptions & { batch: BatchOptions },
  handler: ConsumerBatchHandler,
): Consumer {
  const g = new Consumer(rheo, options, handler);
  started.push(g);
  g.start();
  return g;
}

/** Drain (with a short timeout) every Consumer started by {@link startConsumer}. */
export async function drainAll(): Promise<void> {
  const gs = started.splice(0);
  await Promise.all(gs.map((g) => g.drain(1000)));
}

/** A promise with its resolver, to hold a handler until the test lets it go. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** `n` small events. */
export function events(n: number, keyed = false) {
  return Array.from({ length: n }, (_, i) => ({ type: 't', key: keyed ? `k${i % 7}` : undefined, payload: { i } }));
}
