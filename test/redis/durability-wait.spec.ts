// redisBackend({ durability: { replicas } }): an append returns only once WAIT confirms
// the replicas have it. On a master and replica of this file's own (failover-support.ts):
// confirmed with its replica, refused (ambiguous, yet applied) when it asks for more
// replicas than there are or the replica is killed. The cluster failover with it is
// cluster-failover.spec.ts.
import { Rheo, redisBackend, RheoError } from '../../lib';
import { ReplicatedPair } from './failover-support';
import { freshPrefix } from './support';

const prefix = freshPrefix('wait');

function invalid(options: Parameters<typeof redisBackend>[0]): RheoError {
  try {
    redisBackend(options);
  } catch (err) {
    return err as RheoError;
  }
  throw new Error('redisBackend accepted the options');
}

describe('redis durability option: validation', () => {
  it('names the field it refuses', () => {
    const cases: Array<[unknown, string]> = [
      [null, 'durability'],
      [1, 'durability'],
      [{}, 'durability.replicas'],
      [{ replicas: 0 }, 'durability.replicas'],
      [{ replicas: 1.5 }, 'durability.replicas'],
      [{ replicas: '1' }, 'durability.replicas'],
      [{ replicas: 1, timeoutMs: 0 }, 'durability.timeoutMs'],
      [{ replicas: 1, timeoutMs: -5 }, 'durability.timeoutMs'],
      [{ replicas: 1, timeoutMs: 2.5 }, 'durability.timeoutMs'],
      // At or above the created client's commandTimeout (5000 by default), the client would give up first.
      [{ replicas: 1, timeoutMs: 5000 }, 'durability.timeoutMs'],
      [{ replicas: 1, timeout: 100 }, 'durability.timeout'],
    ];
    for (const [durability, field] of cases) {
      const err = invalid({ durability: durability as never });
      expect(err).toBeInstanceOf(RheoError);
      expect(err.code).toBe('invalid_argument');
      expect(err.field).toBe(field);
    }
    expect(invalid({ durability: { replicas: 1, timeoutMs: 5000 } }).message).toMatch(/commandTimeout \(5000 ms\)/);
  });

  it('accepts a timeout below the commandTimeout of the client or cluster it creates, and defaults to 1000 ms', () => {
    expect(redisBackend({ durability: { replicas: 2 } }).durability).toEqual({ replicas: 2, timeoutMs: 1000 });
    expect(redisBackend({ durability: { replicas: 1, timeoutMs: 8000 }, options: { commandTimeout: 10_000 } }).durability).toEqual({
      replicas: 1,
      timeoutMs: 8000,
    });
    expect(invalid({ durability: { replicas: 1, timeoutMs: 8000 }, options: { commandTimeout: 8000 } }).field).toBe('durability.timeoutMs');
    expect(redisBackend({}).durability).toBeUndefined();
    // A cluster the backend creates: its node connections' commandTimeout (clusterOptions.redisOptions).
    const cluster = ['127.0.0.1:7100'];
    expect(invalid({ cluster, durability: { replicas: 1, timeoutMs: 5000 } }).field).toBe('durability.timeoutMs');
    expect(
      redisBackend({ cluster, durability: { replicas: 1, timeoutMs: 5000 }, clusterOptions: { redisOptions: { commandTimeout: 10_000 } } })
        .durability,
    ).toEqual({ replicas: 1, timeoutMs: 5000 });
  });
});

describe('redis durability option: WAIT on a master with one replica', () => {
  let pair: ReplicatedPair;
  const open: Rheo[] = [];
  const rheoWith = (durability?: { replicas: number; timeoutMs?: number }) => {
    const rheo = new Rheo(redisBackend({ url: `redis://127.0.0.1:${pair.masterPort}`, prefix, ...(durability ? { durability } : {}) }));
    open.push(rheo);
    return rheo;
  };

  beforeAll(async () => {
    pair = await ReplicatedPair.start();
  }, 30_000);

  afterAll(async () => {
    await Promise.all(open.map((r) => r.close()));
    await pair?.stop();
  });

  it('returns once the replica confirms; asks for more than there are: ambiguous, yet applied; idempotent retry', async () => {
    const rheo = rheoWith({ replicas: 1 });
    await rheo.createStream('orders', { partitions: 2 });
    const one = await rheo.append('orders', { id: 'e1', partition: 1, payload: { n: 1 } });
    expect(one.sequence).toBe(1);
    const batch = await rheo.appendBatch('orders', [
      { id: 'e2', partition: 0, payload: { n: 2 } },
      { id: 'e3', partition: 1, payload: { n: 3 } },
    ]);
    expect(batch.map((e) => e.sequence)).toEqual([1, 2]);

    // Two replicas asked, one exists: WAIT answers 1 after its timeout.
    const greedy = rheoWith({ replicas: 2, timeoutMs: 200 });
    const err = await greedy.append('orders', { id: 'e4', partition: 0, payload: { n: 4 } }).catch((e: unknown) => e as RheoError);
    expect(err).toBeInstanceOf(RheoError);
    expect((err as RheoError).code).toBe('ambiguous');
    expect((err as RheoError).message).toMatch(/only 1 of 2 replica\(s\) confirmed it within 200 ms/);
    expect((err as RheoError).message).toMatch(/may have been applied/);
    // It was applied: readable, and appending the same id again returns the stored event.
    expect((await rheo.read('orders', { partition: 0 })).map((e) => e.id)).toEqual(['e2', 'e4']);
    const again = await rheo.append('orders', { id: 'e4', partition: 0, payload: { n: 4 } });
    expect(again.sequence).toBe(2);
  });

  it('the replica killed: every append throws ambiguous (applied on the master), without durability it returns', async () => {
    const rheo = rheoWith({ replicas: 1, timeoutMs: 200 });
    const plain = rheoWith();
    await rheo.createStream('killed');
    await rheo.append('killed', { id: 'k1', payload: 1 });
    await pair.killReplica();

    const err = await rheo.append('killed', { id: 'k2', payload: 2 }).catch((e: unknown) => e as RheoError);
    expect((err as RheoError).code).toBe('ambiguous');
    expect((err as RheoError).message).toMatch(/only 0 of 1 replica\(s\) confirmed it/);
    await expect(plain.append('killed', { id: 'k3', payload: 3 })).resolves.toMatchObject({ sequence: 3 });
    expect((await plain.read('killed')).map((e) => e.id)).toEqual(['k1', 'k2', 'k3']);
  });
});
