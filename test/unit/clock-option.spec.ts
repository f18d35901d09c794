// A backend's `clock` option must be a Clock: anything else is refused by the
// factory, naming the field, before a client or a DataSource exists.
import { memoryBackend, postgresBackend, redisBackend, RheoError, sqliteBackend, storeClock } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory';

const NOT_CLOCKS: Array<[string, unknown]> = [
  ['a number', 5],
  ['null', null],
  ['an object without now', {}],
  ['now that is not a function', { now: 1 }],
];

const FACTORIES: Array<[string, (clock: unknown) => unknown, string]> = [
  ['memoryBackend', (clock) => memoryBackend({ clock } as never), 'options.clock'],
  ['new MemoryBackend', (clock) => new MemoryBackend({ clock } as never), 'options.clock'],
  ['sqliteBackend', (clock) => sqliteBackend({ database: ':memory:', clock } as never), 'options.clock'],
  ['postgresBackend', (clock) => postgresBackend({ url: 'postgres://127.0.0.1:1/none', clock } as never), 'options.clock'],
  // The Redis backend names its fields bare: it has a field called `options` (ioredis options).
  ['redisBackend', (clock) => redisBackend({ url: 'redis://127.0.0.1:1', clock } as never), 'clock'],
  ['storeClock', (clock) => storeClock(clock as never), 'storeClock.base'],
];

function refusal(make: () => unknown): RheoError | undefined {
  try {
    make();
  } catch (err) {
    return err as RheoError;
  }
  return undefined;
}

describe('the clock option', () => {
  describe.each(FACTORIES)('%s', (_name, make, field) => {
    it.each(NOT_CLOCKS)('refuses %s', (_what, clock) => {
      const err = refusal(() => make(clock));
      expect(err).toBeInstanceOf(RheoError);
      expect(err).toMatchObject({ code: 'invalid_argument', field, message: expect.stringContaining('must be a Clock') });
    });
  });

  it('takes a Clock', () => {
    const clock = { now: () => 1_000 };
    expect(memoryBackend({ clock }).clock).toBe(clock);
  });
});
