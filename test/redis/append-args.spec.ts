// The append script takes a batch's small fields as ONE JSON text and answers one first
// sequence per partition plus per-event answers only for ids already stored
// (scripts/append.ts, codec appendArgs/appendOutcomes). Every event must come back,
// and be stored, exactly as before: sequences in batch order per partition, an id
// stored or repeated in the batch answering its stored event, delays, keys and types
// absent or present with awkward characters.
import type { JsonValue } from '../../lib';
import type { NewEvent } from '../../lib/backends/backend';
import { clockedRedis, expectSameEvent, readBack } from './support';

const { clock, backend, rheo } = clockedRedis('appendargs');

function newEvent(id: string, partition: number, extra: Partial<NewEvent> = {}): NewEvent {
  const payload = extra.payload ?? { id };
  const metadata = extra.metadata ?? {};
  return {
    id,
    partition,
    timestamp: new Date(clock.now()),
    key: null,
    type: null,
    metadata,
    metadataJson: JSON.stringify(metadata),
    payload,
    payloadJson: JSON.stringify(payload),
    ...extra,
  };
}

describe('redis append arguments and reply', () => {
  it('mixes new events, ids already stored and ids repeated in the batch across partitions', async () => {
    await rheo.createStream('mix', { partitions: 4 });
    // Stored beforehand: one in partition 1 (in the next batch), one in partition 3 (not in it).
    const [s1] = await rheo.appendBatch('mix', [{ id: 'old-1', partition: 1, key: 'k', type: 't', payload: 'first' }]);
    const [s3] = await rheo.appendBatch('mix', [{ id: 'old-3', partition: 3, payload: { at: 3 }, metadata: { m: 1 } }]);
    const out = await rheo.appendBatch<JsonValue>('mix', [
      { id: 'a', partition: 2, payload: 1 },
      { id: 'old-1', partition: 1, payload: 'ignored' },
      { id: 'b', partition: 1, key: 'kb', payload: 2 },
      { id: 'a', partition: 2, payload: 'repeat ignored' },
      { id: 'c', partition: 2, type: 'tc', payload: 3 },
      { id: 'old-3', partition: 0, payload: 'elsewhere ignored' },
      { id: 'd', partition: 0, payload: 4 },
      { id: 'b', partition: 1, payload: 'repeat ignored' },
      { id: 'e', partition: 1, payload: 5 },
    ]);
    expect(out.map((e) => `${e.id}@${e.partition}:${e.sequence}`)).toEqual([
      'a@2:1',
      'old-1@1:1',
      'b@1:2',
      'a@2:1',
      'c@2:2',
      'old-3@3:1',
      'd@0:1',
      'b@1:2',
      'e@1:3',
    ]);
    expectSameEvent(out[1], s1);
    expectSameEvent(out[5], s3);
    expect(out[3]).toEqual(out[0]);
    expect(out[3]).not.toBe(out[0]);
    for (const e of out) expectSameEvent(e, await readBack(rheo, e));
    // The same batch again: every id is stored now, nothing new is written.
    const again = await rheo.appendBatch<JsonValue>('mix', [
      { id: 'e', partition: 1, payload: 0 },
      { id: 'old-3', partition: 3, payload: 0 },
    ]);
    expectSameEvent(again[0], out[8]);
    expectSameEvent(again[1], s3);
    const next = await rheo.append('mix', { id: 'f', partition: 1, payload: 6 });
    expect(next.sequence).toBe(4);
  });

  it('stores and returns delayed events among others, keys and types absent and present', async () => {
    await rheo.createStream('delay', { partitions: 2 });
    const at = new Date(clock.now() + 60_000);
    const out = await rheo.appendBatch('delay', [
      { id: 'n1', partition: 0, key: 'k "1"', payload: 1 },
      { id: 'd1', partition: 1, type: 'caf\u00e9 \u{1F600}', deliverAt: at, payload: 2 },
      { id: 'd2', partition: 0, key: 'back\\slash', type: 'line\u2028sep', delayMs: 1000, payload: 3 },
      { id: 'n2', partition: 1, payload: 4 },
    ]);
    expect(out.map((e) => [e.id, e.sequence, e.key, e.type, e.deliverAt?.getTime() ?? null])).toEqual([
      ['n1', 1, 'k "1"', null, null],
      ['d1', 1, null, 'caf\u00e9 \u{1F600}', at.getTime()],
      ['d2', 2, 'back\\slash', 'line\u2028sep', clock.now() + 1000],
      ['n2', 2, null, null, null],
    ]);
    for (const e of out) expectSameEvent(e, await readBack(rheo, e));
    // Duplicates of delayed events answer them with their deliverAt.
    const dup = await rheo.appendBatch('delay', [
      { id: 'd1', payload: 0 },
      { id: 'd2', payload: 0 },
    ]);
    expectSameEvent(dup[0], out[1]);
    expectSameEvent(dup[1], out[2]);
  });

  it('stores names with control characters and returns copies of the input payload', async () => {
    await rheo.createStream('ctl', { partitions: 1 });
    const payload = { z: -0, list: [1, { deep: 'x' }], ['__proto__']: { own: true } } as unknown as JsonValue;
    Object.defineProperty(payload, '__proto__', { value: { own: true }, enumerable: true, writable: true, configurable: true });
    const [e] = await backend.append('ctl', [newEvent('id\u0000\u0001', 0, { key: 'k\u0000"', type: 't\u001f\\', payload })]);
    expect([e.id, e.key, e.type]).toEqual(['id\u0000\u0001', 'k\u0000"', 't\u001f\\']);
    // What reading the stored event back gives (lib/backends/copies.ts copyJson): -0 is stored as 0.
    expect(e.payload).toEqual(JSON.parse(JSON.stringify(payload)));
    expect(Object.is((e.payload as { z: number }).z, 0)).toBe(true);
    expect(Object.getOwnPropertyNames(e.payload)).toEqual(['z', 'list', '__proto__']);
    expect(e.payload).not.toBe(payload);
    expect((e.payload as { list: unknown[] }).list).not.toBe((payload as { list: unknown[] }).list);
    const stored = await readBack(rheo, e);
    expect([stored.id, stored.key, stored.type]).toEqual([e.id, e.key, e.type]);
  });
});
