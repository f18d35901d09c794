import { Rheo, redisBackend, RheoError } from '../../lib';
import { deleteKeys, freshPrefix, REDIS_URL } from './support';

const prefix = freshPrefix('key-cache');

afterAll(async () => {
  await deleteKeys(prefix);
});

// The backend caches the key objects of the streams it is asked about. Names come
// from callers, unknown ones included, so the cache must not grow with every name
// ever looked up (50k unknown names cost +10.5 MB of heap before it was bounded).
it('50,000 lookups of stream names that do not exist keep the key cache bounded; known streams keep working', async () => {
  const backend = redisBackend({ url: REDIS_URL, prefix });
  const rheo = new Rheo(backend);
  try {
    await rheo.createStream('real');
    await rheo.createGroup('real', 'g');
    await rheo.append('real', { payload: 'before' });
    for (let from = 0; from < 50_000; from += 5000) {
      const infos = await Promise.all(Array.from({ length: 5000 }, (_, i) => backend.getStream(`missing-${from + i}`)));
      expect(infos.every((info) => info === null)).toBe(true);
    }
    // Through the facade too: an unknown stream is reported, not remembered.
    const err = await rheo.lag('missing-again', 'g').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RheoError);
    expect((err as RheoError).code).toBe('stream_not_found');
    expect(backend.keyCacheSize).toBeGreaterThan(0);
    expect(backend.keyCacheSize).toBeLessThanOrEqual(1024);
    // A stream whose keys were dropped from the cache is still served (its keys are rebuilt).
    await rheo.append('real', { payload: 'after' });
    const leases = await rheo.fetch('real', 'g', { limit: 10 });
    expect(leases.map((l) => l.event.payload)).toEqual(['before', 'after']);
  } finally {
    await rheo.close();
  }
}, 120_000);
