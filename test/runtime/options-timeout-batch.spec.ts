// The Consumer options of issue 13's timeouts and batches: defaults, and a
// RheoError naming the field for every bad value.
import { isRheoError } from '../../lib';
import { resolveGroupOptions } from '../../lib/runtime/options';

const base = { stream: 's', group: 'g' };

function fieldOf(options: Record<string, unknown>): string | undefined {
  try {
    resolveGroupOptions({ ...base, ...options });
  } catch (err) {
    if (isRheoError(err, 'invalid_argument')) return err.field;
    throw err;
  }
  throw new Error('expected an invalid_argument RheoError');
}

describe('Consumer options: timeoutMs, onTimeout, batch', () => {
  it('has no timeout, retries on timeout, and runs one lease per call by default', () => {
    expect(resolveGroupOptions(base)).toMatchObject({ timeoutMs: undefined, onTimeout: 'retry', batch: undefined, maxDemand: 10 });
  });

  it('keeps given values; a batch defaults maxWaitMs to 50 and maxDemand to size × (concurrency + 1)', () => {
    expect(resolveGroupOptions({ ...base, timeoutMs: 250, onTimeout: 'dead-letter' })).toMatchObject({
      timeoutMs: 250,
      onTimeout: 'dead-letter',
    });
    expect(resolveGroupOptions({ ...base, concurrency: 2, batch: { size: 100 } })).toMatchObject({
      batch: { size: 100, maxWaitMs: 50 },
      maxDemand: 300,
    });
    expect(resolveGroupOptions({ ...base, maxDemand: 150, batch: { size: 100, maxWaitMs: 0 } })).toMatchObject({
      batch: { size: 100, maxWaitMs: 0 },
      maxDemand: 150,
    });
  });

  it.each([
    [{ timeoutMs: 0 }, 'timeoutMs'],
    [{ timeoutMs: 1.5 }, 'timeoutMs'],
    [{ timeoutMs: '100' }, 'timeoutMs'],
    [{ onTimeout: 'drop' }, 'onTimeout'],
    [{ batch: 10 }, 'batch'],
    [{ batch: {} }, 'batch.size'],
    [{ batch: { size: 0 } }, 'batch.size'],
    [{ batch: { size: 10_001 } }, 'batch.size'],
    [{ batch: { size: 20 }, maxDemand: 10 }, 'batch.size'],
    [{ batch: { size: 2, maxWaitMs: -1 } }, 'batch.maxWaitMs'],
    [{ batch: { size: 2, maxWait: 10 } }, 'batch.maxWait'],
  ])('refuses %j, naming %s', (options, field) => {
    expect(fieldOf(options)).toBe(field);
  });
});
