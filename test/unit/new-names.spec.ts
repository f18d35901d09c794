import { ManualClock, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { RheoInstance } from '../../lib/nest/rheo-instance';

// The module's stream declarations follow the facade's rule for '/': a new stream
// with one is refused at startup, an existing one is found and kept.

describe("a module's stream declarations with '/'", () => {
  it('refuses to create a new one, naming the field, and creates nothing', async () => {
    const backend = new MemoryBackend({ clock: new ManualClock() });
    const instance = new RheoInstance('default', { backend, streams: [{ name: 'eu/orders', partitions: 2 }] });
    const err = await instance.ensureStreams().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RheoError);
    expect(err).toMatchObject({ code: 'invalid_argument', field: 'stream', message: expect.stringContaining("must not contain '/'") });
    expect(await instance.rheo.listStreams()).toEqual([]);
  });

  it('keeps one the store already has, and applies its declared retention', async () => {
    const backend = new MemoryBackend({ clock: new ManualClock() });
    await backend.init();
    await backend.createStream('eu/orders', 2);
    const instance = new RheoInstance('default', { backend, streams: [{ name: 'eu/orders', partitions: 2, retention: { maxEvents: 5 } }] });
    await instance.ensureStreams();
    expect(await instance.rheo.listStreams()).toEqual([
      expect.objectContaining({ name: 'eu/orders', partitions: 2, retention: { maxEvents: 5 } }),
    ]);
  });
});
