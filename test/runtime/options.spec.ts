import { Consumer, isRheoError, ManualClock, Rheo } from '../../lib';
import { backoffDelay } from '../../lib/core/backoff';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { FETCH_BACKOFF, resolveGroupOptions } from '../../lib/runtime/options';

const rheo = new Rheo(new MemoryBackend({ clock: new ManualClock() }));
const noop = async () => undefined;
const base = { stream: 's', group: 'g' };

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (isRheoError(err, 'invalid_argument')) return err.field;
    throw err;
  }
  throw new Error('expected an invalid_argument RheoError');
}

describe('Consumer options', () => {
  it('applies the documented defaults', () => {
    const o = resolveGroupOptions(base);
    expect(o).toMatchObject({
      stream: 's',
      group: 'g',
      maxDemand: 10,
      concurrency: 1,
      leaseMs: 30_000,
      pollMs: 200,
      drainTimeoutMs: 10_000,
    });
    expect(o.partitions).toBeUndefined();
    expect(typeof o.consumerId).toBe('string');
    expect(resolveGroupOptions(base).consumerId).not.toBe(o.consumerId);
  });

  it('keeps given values and normalises partitions', () => {
    const o = resolveGroupOptions({
      ...base,
      maxDemand: 5,
      concurrency: 3,
      leaseMs: 1000,
      pollMs: 50,
      consumerId: 'c1',
      partitions: [2, 0, 2],
      drainTimeoutMs: 0,
    });
    expect(o).toMatchObject({
      maxDemand: 5,
      concurrency: 3,
      leaseMs: 1000,
      pollMs: 50,
      consumerId: 'c1',
      partitions: [0, 2],
      drainTimeoutMs: 0,
    });
  });

  it('defaults pollMs below a short leaseMs instead of refusing it', () => {
    expect(resolveGroupOptions({ ...base, leaseMs: 100 }).pollMs).toBe(99);
  });

  it.each([
    [{ ...base, stream: '' }, 'stream'],
    [{ ...base, stream: 42 }, 'stream'],
    [{ stream: 's' }, 'group'],
    [{ ...base, group: 'a\u0001' }, 'group'],
    [{ ...base, maxDemand: 0 }, 'maxDemand'],
    [{ ...base, maxDemand: 1.5 }, 'maxDemand'],
    [{ ...base, maxDemand: '10' }, 'maxDemand'],
    [{ ...base, concurrency: 0 }, 'concurrency'],
    [{ ...base, concurrency: -1 }, 'concurrency'],
    [{ ...base, leaseMs: 0 }, 'leaseMs'],
    [{ ...base, leaseMs: Number.NaN }, 'leaseMs'],
    [{ ...base, pollMs: 0 }, 'pollMs'],
    [{ ...base, leaseMs: 1000, pollMs: 1000 }, 'pollMs'],
    [{ ...base, leaseMs: 1000, pollMs: 5000 }, 'pollMs'],
    [{ ...base, consumerId: '' }, 'consumerId'],
    [{ ...base, partitions: [] }, 'partitions'],
    [{ ...base, partitions: 'all' }, 'partitions'],
    [{ ...base, partitions: [0, -1] }, 'partitions[1]'],
    [{ ...base, drainTimeoutMs: -5 }, 'drainTimeoutMs'],
    [null, 'options'],
    [[], 'options'],
  ])('refuses %j naming %s', (options, field) => {
    expect(fieldOf(() => new Consumer(rheo, options as never, noop))).toBe(field);
  });

  it('refuses a missing handler or facade', () => {
    expect(fieldOf(() => new Consumer(rheo, base, undefined as never))).toBe('handler');
    expect(fieldOf(() => new Consumer({} as never, base, noop))).toBe('rheo');
  });

  it('a bad drain timeout is refused and changes nothing', async () => {
    const g = new Consumer(rheo, base, noop);
    await expect(g.drain(-1)).rejects.toMatchObject({ code: 'invalid_argument', field: 'timeoutMs' });
    expect(g.state).toBe('idle');
    await expect(g.drain()).resolves.toBe('drained');
    expect(g.state).toBe('stopped');
  });
});

describe('fetch backoff policy', () => {
  it('is 100 ms doubling to 5 s through the one backoffDelay', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 50].map((n) => backoffDelay(FETCH_BACKOFF, n))).toEqual([
      100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000,
    ]);
  });
});
