import type { JsonValue, RheoErrorCode } from '../../lib';
import { ManualClock, Rheo, RheoAdmin, RheoError } from '../../lib';
import {
  DEFAULT_MAX_BATCH_BYTES,
  DEFAULT_MAX_METADATA_BYTES,
  MAX_DELAY_MS,
  MAX_FILTER_BYTES,
  MAX_FILTER_DEPTH,
  MAX_FILTER_KEYS,
} from '../../lib/core/limits';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { RheoInstance } from '../../lib/nest/rheo-instance';
import { expectRefused } from '../support/refusals';

/**
 * The size limits of what a caller hands in: metadata per event, the bytes of one
 * appendBatch call, query filters (keys, depth, bytes) and how far ahead an event
 * may be delayed. Each is enforced by the facade before the backend is reached,
 * with a RheoError naming the field, and changes nothing.
 */

const START = Date.UTC(2026, 0, 1);
let clock: ManualClock;
let backend: MemoryBackend;
let rheo: Rheo;

beforeEach(async () => {
  clock = new ManualClock(START);
  backend = new MemoryBackend({ clock });
  rheo = new Rheo(backend);
  await rheo.createStream('s', { partitions: 2 });
  await rheo.createGroup('s', 'g');
  await rheo.append('s', { key: 'a', type: 't', metadata: { source: 'x' }, payload: { n: 1 } });
});

const refused = (call: () => Promise<unknown>, code: RheoErrorCode, field: string): Promise<RheoError> =>
  expectRefused(rheo, call, code, field);

/** Metadata whose JSON text is exactly `bytes` long: `{"m":"xxx…"}`. */
const metadataOf = (bytes: number) => ({ m: 'x'.repeat(bytes - 8) });
/** A payload whose JSON text is exactly `bytes` long: `"xxx…"`. */
const payloadOf = (bytes: number) => 'x'.repeat(bytes - 2);

describe('metadata size', () => {
  it('bounds metadata at 64 KiB by default, with payload_too_large naming the field', async () => {
    expect(DEFAULT_MAX_METADATA_BYTES).toBe(65536);
    const e = await refused(() => rheo.append('s', { payload: 1, metadata: metadataOf(65537) }), 'payload_too_large', 'event.metadata');
    expect(e.message).toBe('event.metadata is 65537 bytes, over the limit of 65536');
    expect((await rheo.append('s', { payload: 1, metadata: metadataOf(65536) })).metadata).toEqual(metadataOf(65536));
  });

  it('counts UTF-8 bytes, not characters', async () => {
    await refused(() => rheo.append('s', { payload: 1, metadata: { m: 'é'.repeat(32768) } }), 'payload_too_large', 'event.metadata');
  });

  it('takes maxMetadataBytes, and names the event of a batch', async () => {
    const small = new Rheo(backend, { maxMetadataBytes: 100 });
    const e = await refused(
      () => small.appendBatch<JsonValue>('s', [{ payload: 1 }, { payload: 2 }, { payload: 3 }, { payload: 4, metadata: metadataOf(101) }]),
      'payload_too_large',
      'events[3].metadata',
    );
    expect(e.message).toBe('events[3].metadata is 101 bytes, over the limit of 100');
    expect((await small.append('s', { payload: 1, metadata: metadataOf(100) })).sequence).toBeGreaterThan(0);
  });

  it('refuses a maxMetadataBytes that is not a positive integer', () => {
    expect(() => new Rheo(backend, { maxMetadataBytes: 0 })).toThrow(expect.objectContaining({ field: 'maxMetadataBytes' }));
    expect(() => new Rheo(backend, { maxMetadataBytes: 1.5 })).toThrow(expect.objectContaining({ field: 'maxMetadataBytes' }));
  });
});

describe('appendBatch size', () => {
  it('bounds one appendBatch call at 16 MiB of payload and metadata JSON by default', async () => {
    expect(DEFAULT_MAX_BATCH_BYTES).toBe(16 * 1024 * 1024);
    // 17 payloads of 1,000,000 bytes: each under the payload limit, 17 MB in all.
    const inputs = Array.from({ length: 17 }, () => ({ payload: payloadOf(1_000_000) }));
    const e = await refused(() => rheo.appendBatch('s', inputs), 'payload_too_large', 'events');
    expect(e.message).toBe(`events is 17000000 bytes in all, over the limit of ${16 * 1024 * 1024} per appendBatch call`);
    expect(await rheo.appendBatch('s', inputs.slice(0, 16))).toHaveLength(16);
  });

  it('takes maxBatchBytes and counts metadata too; a batch exactly at the limit is written', async () => {
    const small = new Rheo(backend, { maxBatchBytes: 1000 });
    // 400 bytes of payload without metadata (it counts nothing), then 400 of payload and 200 of metadata: 1000 in all.
    const batch = [{ payload: payloadOf(400) }, { payload: payloadOf(400), metadata: metadataOf(200) }];
    expect(await small.appendBatch('s', batch)).toHaveLength(2);
    const e = await refused(() => small.appendBatch<JsonValue>('s', [...batch, { payload: 1 }]), 'payload_too_large', 'events');
    expect(e.message).toBe('events is 1001 bytes in all, over the limit of 1000 per appendBatch call');
    // A single append is bounded per event, not by maxBatchBytes.
    expect((await small.append('s', { payload: payloadOf(2000) })).payload).toBe(payloadOf(2000));
  });

  it('refuses a maxBatchBytes that is not a positive integer', () => {
    expect(() => new Rheo(backend, { maxBatchBytes: -1 })).toThrow(expect.objectContaining({ field: 'maxBatchBytes' }));
  });
});

describe('query filter bounds', () => {
  const keys = (n: number, value: (i: number) => JsonValue = (i) => `v${i}`) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value(i)]));
  const nested = (levels: number): JsonValue => (levels === 0 ? 1 : { d: nested(levels - 1) });

  it('refuses more than MAX_FILTER_KEYS keys of metadata and payload filters together', async () => {
    expect(MAX_FILTER_KEYS).toBe(64);
    const e = await refused(
      () => rheo.query({ stream: 's', where: { metadata: keys(40), payload: keys(25) } }),
      'invalid_argument',
      'query.where',
    );
    expect(e.message).toBe('query.where must hold at most 64 metadata and payload filter keys in all (it holds 65)');
    await refused(() => rheo.query({ stream: 's', where: { payload: keys(20_000) } }), 'invalid_argument', 'query.where');
    expect(await rheo.query({ stream: 's', where: { metadata: keys(32), payload: keys(32) } })).toEqual([]);
  });

  it('refuses a filter value nested deeper than MAX_FILTER_DEPTH', async () => {
    expect(MAX_FILTER_DEPTH).toBe(8);
    const e = await refused(
      () => rheo.query({ stream: 's', where: { payload: { a: nested(9) } } }),
      'invalid_argument',
      `query.where.payload.a${'.d'.repeat(8)}`,
    );
    expect(e.message).toContain('nested at most 8 levels deep');
    await refused(
      () => rheo.query({ stream: 's', where: { metadata: { a: [[[[[[[[[1]]]]]]]]] } } }),
      'invalid_argument',
      'query.where.metadata.a[0][0][0][0][0][0][0][0]',
    );
    expect(await rheo.query({ stream: 's', where: { payload: { a: nested(8) } } })).toEqual([]);
  });

  it('refuses metadata and payload filters over MAX_FILTER_BYTES of JSON together', async () => {
    expect(MAX_FILTER_BYTES).toBe(16 * 1024);
    // {"a":"…"} and {"b":"…"}: 8 bytes of JSON around each string.
    const e = await refused(
      () => rheo.query({ stream: 's', where: { metadata: { a: 'x'.repeat(8000) }, payload: { b: 'x'.repeat(8369) } } }),
      'invalid_argument',
      'query.where',
    );
    expect(e.message).toBe('query.where is 16385 bytes of metadata and payload filters, over the limit of 16384');
    expect(await rheo.query({ stream: 's', where: { metadata: { a: 'x'.repeat(8000) }, payload: { b: 'x'.repeat(8368) } } })).toEqual([]);
  });

  it('bounds every way in: queryPage, queryStream, replay by query, the admin tail and replay', async () => {
    const where = { payload: keys(65) };
    await refused(() => rheo.queryPage({ stream: 's', where }), 'invalid_argument', 'query.where');
    await refused(
      async () => {
        for await (const _ of rheo.queryStream({ stream: 's', where })) void _;
      },
      'invalid_argument',
      'query.where',
    );
    await refused(() => rheo.replay('s', 'g', { query: { where } }), 'invalid_argument', 'query.where');
    const admin = new RheoAdmin(rheo);
    await refused(() => admin.tail('s', { where }), 'invalid_argument', 'query.where');
    await refused(() => admin.replay('s', 'g', { where }), 'invalid_argument', 'query.where');
  });
});

describe('deliverAt bound', () => {
  it('refuses a deliverAt more than MAX_DELAY_MS after now, as delayMs is bounded', async () => {
    const e = await refused(
      () => rheo.append('s', { payload: 1, deliverAt: new Date(START + MAX_DELAY_MS + 1) }),
      'invalid_argument',
      'event.deliverAt',
    );
    expect(e.message).toBe(`event.deliverAt must be at most ${MAX_DELAY_MS} ms after now (a year, as delayMs)`);
    await refused(() => rheo.append('s', { payload: 1, deliverAt: new Date(8.64e15) }), 'invalid_argument', 'event.deliverAt');
    await refused(
      () => rheo.appendBatch('s', [{ payload: 1 }, { payload: 2, deliverAt: new Date(START + 2 * MAX_DELAY_MS) }]),
      'invalid_argument',
      'events[1].deliverAt',
    );
    await refused(() => rheo.append('s', { payload: 1, delayMs: MAX_DELAY_MS + 1 }), 'invalid_argument', 'event.delayMs');
  });

  it('measures from the backend clock: exactly a year ahead, and any past time, are accepted', async () => {
    const atLimit = await rheo.append('s', { payload: 1, deliverAt: new Date(START + MAX_DELAY_MS) });
    expect(atLimit.deliverAt).toEqual(new Date(START + MAX_DELAY_MS));
    expect((await rheo.append('s', { payload: 1, deliverAt: new Date(0) })).deliverAt).toEqual(new Date(0));
    clock.advance(1000);
    expect((await rheo.append('s', { payload: 1, deliverAt: new Date(START + MAX_DELAY_MS + 1000) })).sequence).toBeGreaterThan(0);
  });
});

describe('RheoModule options', () => {
  it('passes maxMetadataBytes and maxBatchBytes to the facade', async () => {
    const instance = new RheoInstance('default', { backend, maxMetadataBytes: 50, maxBatchBytes: 200 });
    await refused(() => instance.rheo.append('s', { payload: 1, metadata: metadataOf(51) }), 'payload_too_large', 'event.metadata');
    await refused(
      () => instance.rheo.appendBatch('s', [{ payload: payloadOf(151) }, { payload: payloadOf(50) }]),
      'payload_too_large',
      'events',
    );
  });
});
