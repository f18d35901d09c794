// The fetch script answers its leases as ONE JSON text built in Lua (scripts/fetch.ts):
// strings through cjson.encode, metadata and payload embedded as stored, numbers as the
// stored texts. Every event must come out of a fetch exactly as it was appended, and as
// a read (RESP, eventFromEntry) returns it: same values, same fields in the same order.
import type { JsonValue } from '../../lib';
import { escapeName } from '../../lib/backends/redis/keys';
import { clockedRedis, expectSameEvent, readBack } from './support';

const { prefix, clock, backend, rheo, admin } = clockedRedis('fetchreply');

/** Strings JSON must escape, and text outside ASCII (cjson passes UTF-8 bytes through as they are). */
const AWKWARD = [
  'q"uote',
  'back\\slash\\',
  'sl/ash</script>',
  'caf\u00e9 \u65e5\u672c \u{1F600}',
  'line\u2028sep\u2029',
  '\\"\\u0000',
  '{"not":"json"',
  '[1,2]',
];

describe('redis fetch reply (one JSON text)', () => {
  it('delivers ids, keys, types, metadata and payloads with awkward characters exactly as appended', async () => {
    await rheo.createStream('awk', { partitions: 3 });
    await rheo.createGroup('awk', 'g');
    const payloads: JsonValue[] = [
      'nul \u0000 inside',
      { text: 'caf\u00e9 \u{1F600} \u0000 \u001f \u007f', nested: [1.5, -1e-7, 1e21, null, true, { '': 'empty key' }] },
      ['\u2028', '\\', '"', '/'],
      2 ** 60,
      null,
      '',
      {},
    ];
    const inputs = AWKWARD.map((s, i) => ({
      id: `id-${i}-${s}`,
      key: `key-${s}`,
      type: i % 2 === 0 ? `type-${s}` : undefined,
      metadata: { note: s, n: i, deep: { s } },
      payload: payloads[i % payloads.length],
      timestamp: new Date(i === 0 ? -86_400_000 : i === 1 ? 0 : Date.UTC(2030, 5, 15, 12, 0, 0, i)),
    }));
    const appended = await rheo.appendBatch('awk', inputs);
    const leases = await rheo.fetch('awk', 'g', { limit: 100 });
    expect(leases).toHaveLength(inputs.length);
    const byId = new Map(appended.map((e) => [e.id, e]));
    for (const lease of leases) {
      const want = byId.get(lease.event.id)!;
      expect(want).toBeDefined();
      expectSameEvent(lease.event, await readBack(rheo, want));
      expect(lease.event).toEqual(want);
      expect(lease.receipt).toBe(`0-${want.sequence}`);
      expect(lease.attempt).toBe(1);
    }
    // Redelivery reads the entry on another path (logEntry), with the stored attempt.
    await rheo.settleMany(leases.map((lease) => ({ kind: 'nack' as const, lease, delayMs: 0 })));
    const again = await rheo.fetch('awk', 'g', { limit: 100 });
    expect(again).toHaveLength(inputs.length);
    for (const lease of again) {
      expectSameEvent(lease.event, await readBack(rheo, byId.get(lease.event.id)!));
      expect(lease.attempt).toBe(2);
    }
    const results = await rheo.settleMany(again.map((lease) => ({ kind: 'ack' as const, lease })));
    expect(results.every((r) => r.ok)).toBe(true);
  });

  it('delivers control characters in id, key and type (a backend-level append, past the facade checks)', async () => {
    await rheo.createStream('ctl');
    await rheo.createGroup('ctl', 'g');
    const odd = 'c\u0000\u0001\b\t\n\r\u001f\u007f"\\/\u00ff\u{10FFFF}';
    const metadata = { odd };
    await backend.append('ctl', [
      {
        id: `id${odd}`,
        partition: 0,
        timestamp: new Date(clock.now()),
        key: `k${odd}`,
        type: `t${odd}`,
        metadata,
        metadataJson: JSON.stringify(metadata),
        payload: odd,
        payloadJson: JSON.stringify(odd),
      },
    ]);
    const [lease] = await rheo.fetch('ctl', 'g', { limit: 10 });
    expect(lease.event).toMatchObject({ id: `id${odd}`, key: `k${odd}`, type: `t${odd}`, metadata, payload: odd });
    expectSameEvent(lease.event, await readBack(rheo, lease.event));
    await rheo.ack(lease);
  });

  it('gives a delayed event its deliverAt, and none to the others', async () => {
    await rheo.createStream('later');
    await rheo.createGroup('later', 'g');
    const at = new Date(clock.now() + 60_000);
    const [delayed] = await rheo.appendBatch('later', [{ id: 'd', payload: 1, deliverAt: at }]);
    await rheo.appendBatch('later', [{ id: 'now', payload: 2 }]);
    const first = await rheo.fetch('later', 'g', { limit: 10 });
    expect(first.map((l) => l.event.id)).toEqual(['now']);
    expect('deliverAt' in first[0].event).toBe(false);
    expectSameEvent(first[0].event, await readBack(rheo, first[0].event));
    clock.advance(60_000);
    const [lease] = await rheo.fetch('later', 'g', { limit: 10 });
    expect(lease.event.id).toBe('d');
    expect(lease.event.deliverAt).toEqual(at);
    expect(lease.event.deliverAt).toBeInstanceOf(Date);
    expectSameEvent(lease.event, delayed);
    expectSameEvent(lease.event, await readBack(rheo, delayed));
    await rheo.settleMany([...first, lease].map((l) => ({ kind: 'ack' as const, lease: l })));
  });

  it('delivers a sequence near 10^14 exactly (the stored entry id, not a Lua number printed)', async () => {
    const big = 99_999_999_999_990;
    await rheo.createStream('big');
    // As if that many events had been appended: the next one gets sequence `big`.
    await admin.hset(`${prefix}:{${escapeName('big')}}:meta`, 'hw:0', String(big - 1));
    await rheo.createGroup('big', 'g', { start: 'end' });
    const [e] = await rheo.appendBatch('big', [{ id: 'b', payload: { big } }]);
    expect(e.sequence).toBe(big);
    const [lease] = await rheo.fetch('big', 'g', { limit: 10 });
    expect(lease.event.sequence).toBe(big);
    expect(lease.receipt).toBe(`0-${big}`);
    expectSameEvent(lease.event, e);
    await rheo.ack(lease);
    expect((await rheo.lag('big', 'g')).lag).toBe(0);
  });
});

// The settle script takes its ops as ONE JSON text (scripts/settle.ts): per op by kind, the
// receipt compared by the backend, the partition's KEYS slot numbered by first appearance.
describe('redis settle ops (one JSON text)', () => {
  const REASONS = ['q"uote|bar\\', 'nul\u0000 nl\n tab\t', 'caf\u00e9 \u{1F600}', '[1,2]', 'null', '', '|||'];

  it('applies acks, rejects and nacks across partitions in one call, reasons stored exactly (U+0000 as U+FFFD, as on every backend)', async () => {
    await rheo.createStream('ops', { partitions: 3 });
    await rheo.createGroup('ops', 'g', { maxAttempts: 2, retry: { initialMs: 5000, factor: 1, maxMs: 5000 } });
    // Partitions in the call's order 2, 0, 1: the script numbers slots as the backend did.
    await rheo.appendBatch(
      'ops',
      Array.from({ length: 12 }, (_, i) => ({ id: `e${i}`, partition: [2, 0, 1][i % 3], payload: i })),
    );
    const leases = await rheo.fetch('ops', 'g', { limit: 100 });
    expect(leases).toHaveLength(12);
    leases.sort((a, b) => Number(a.event.id.slice(1)) - Number(b.event.id.slice(1)));
    const results = await rheo.settleMany(
      leases.map((lease, i) =>
        i % 4 === 0
          ? { kind: 'ack' as const, lease }
          : i % 4 === 1
            ? { kind: 'reject' as const, lease, reason: REASONS[i % REASONS.length] }
            : i % 4 === 2
              ? { kind: 'nack' as const, lease, reason: REASONS[i % REASONS.length], delayMs: 0 }
              : { kind: 'nack' as const, lease, reason: 'backoff' },
      ),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    const dead = await rheo.deadLetters('ops', 'g', { limit: 100 });
    expect(new Map(dead.map((d) => [d.eventId, d.reason]))).toEqual(
      new Map(leases.flatMap((l, i) => (i % 4 === 1 ? [[l.event.id, REASONS[i % REASONS.length].replaceAll('\u0000', '\uFFFD')]] : []))),
    );
    // delayMs 0: due now; no delay: the group's backoff (5 s).
    const now = await rheo.fetch('ops', 'g', { limit: 100 });
    expect(now.map((l) => l.event.id).sort()).toEqual(
      leases
        .filter((_, i) => i % 4 === 2)
        .map((l) => l.event.id)
        .sort(),
    );
    expect(now.every((l) => l.attempt === 2)).toBe(true);
    clock.advance(5000);
    const later = await rheo.fetch('ops', 'g', { limit: 100 });
    expect(later.map((l) => l.event.id).sort()).toEqual(
      leases
        .filter((_, i) => i % 4 === 3)
        .map((l) => l.event.id)
        .sort(),
    );
    // A nack at the last attempt dead-letters with its reason.
    const last = await rheo.settleMany([...now, ...later].map((lease) => ({ kind: 'nack' as const, lease, reason: 'last "one"|\u0000' })));
    expect(last.every((r) => r.ok)).toBe(true);
    const all = await rheo.deadLetters('ops', 'g', { limit: 100 });
    expect(all).toHaveLength(9);
    expect(all.filter((d) => d.reason === 'last "one"|\uFFFD')).toHaveLength(6);
    expect((await rheo.lag('ops', 'g')).lag).toBe(0);
  });

  it('fences every op as before: stale lease first, then the receipt, the rest of the call applied', async () => {
    await rheo.createStream('fence', { partitions: 2 });
    await rheo.createGroup('fence', 'g');
    await rheo.appendBatch(
      'fence',
      Array.from({ length: 6 }, (_, i) => ({ id: `f${i}`, partition: i % 2, payload: i })),
    );
    const leases = await rheo.fetch('fence', 'g', { limit: 100 });
    expect(leases).toHaveLength(6);
    const [a, b, c, d, e, f] = leases;
    const results = await backend.settle([
      { kind: 'ack', lease: { ...a, receipt: `${a.receipt}|x` } },
      { kind: 'ack', lease: { ...b, leaseId: `${b.leaseId}|"\\` } },
      { kind: 'ack', lease: { ...c, leaseId: 'x\ud800', receipt: 'nope' } },
      { kind: 'reject', lease: d, reason: 'lone \udc00 surrogate' },
      { kind: 'ack', lease: e },
      { kind: 'ack', lease: e },
      { kind: 'nack', lease: { ...f, receipt: '0-999' }, reason: 'r', delayMs: 0 },
    ]);
    expect(results.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual([
      'receipt_mismatch',
      'stale_lease',
      'stale_lease',
      'ok',
      'ok',
      'stale_lease',
      'receipt_mismatch',
    ]);
    const [dl] = await rheo.deadLetters('fence', 'g');
    expect(dl.reason).toBe('lone \ufffd surrogate');
    expect((await rheo.settleMany([a, b, c, f].map((lease) => ({ kind: 'ack' as const, lease })))).every((r) => r.ok)).toBe(true);
    expect((await rheo.lag('fence', 'g')).lag).toBe(0);
  });

  it('tells the expired leases a claim dead-lettered, ids with awkward characters exactly, beside the leases it took', async () => {
    await rheo.createStream('expiring', { partitions: 2 });
    await rheo.createGroup('expiring', 'g', { maxAttempts: 1 });
    const ids = AWKWARD.slice(0, 4).map((s, i) => `dead-${i}-${s}`);
    const poison = await rheo.appendBatch(
      'expiring',
      ids.map((id, i) => ({ id, partition: i % 2, payload: i })),
    );
    const held = await rheo.fetch('expiring', 'g', { limit: 10, leaseMs: 1000 });
    expect(held).toHaveLength(4);
    expect(held.deadLettered).toBeUndefined();
    const fresh = await rheo.appendBatch('expiring', [
      { partition: 0, payload: 'a' },
      { partition: 1, payload: 'b' },
    ]);
    clock.advance(1001);
    const next = await rheo.fetch('expiring', 'g', { limit: 10, leaseMs: 1000 });
    expect(next.map((l) => l.event.id).sort()).toEqual(fresh.map((e) => e.id).sort());
    const told = [...(next.deadLettered ?? [])].sort((a, b) => a.partition - b.partition || a.sequence - b.sequence);
    const want = [...poison]
      .sort((a, b) => a.partition - b.partition || a.sequence - b.sequence)
      .map((e) => ({ eventId: e.id, partition: e.partition, sequence: e.sequence, attempt: 1, reason: 'lease expired on attempt 1 of 1' }));
    expect(told).toEqual(want);
    expect((await rheo.deadLetters('expiring', 'g')).map((d) => d.eventId).sort()).toEqual(ids.slice().sort());
  });
});
