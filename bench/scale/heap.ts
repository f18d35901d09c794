// Process memory around the big consume. A full GC first (exposed at run time,
// since the bench runs under ts-node without --expose-gc), so the heap figure is
// what is retained, not garbage that no collection has visited yet.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

function collect(): boolean {
  if (!gc) {
    try {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    } catch {
      return false;
    }
  }
  gc();
  return true;
}

/** RSS and retained heap, MB, after a full collection when one can be had. */
export function memoryMb(): { rssMb: number; heapMb: number; collected: boolean } {
  const collected = collect();
  const { rss, heapUsed } = process.memoryUsage();
  return { rssMb: Math.round(rss / 1048576), heapMb: Math.round(heapUsed / 1048576), collected };
}
