import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Consumer, Rheo, RheoError } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { rheoTransportId, RHEO_CONSUMER_METADATA } from '../../lib/nest/constants';
import { resolveConsumer, type RheoConsumerOptions, type RheoConsumerSettings } from '../../lib/nest/consumer-options';
import { RheoConsumer } from '../../lib/nest/rheo-consumer.decorator';
import { CONSUMER_FIELDS, type ConsumerFields, defaultOf, type FieldKey, type FieldSpec } from '../../lib/runtime/consumer-settings';
import { resolveGroupOptions } from '../../lib/runtime/options';
import { optionsTable, TABLE_DOC, tableDifference, withTable } from '../../scripts/consumer-options-table';

// Every consumer option is declared once (CONSUMER_FIELDS); these tests hold each
// API to what the declaration says of it: the field reaches the decorator, the
// module's configuration and the runtime where it is declared settable, and is
// refused, naming it and the valid keys, where it is not.

type Spec = FieldSpec<unknown>;
const FIELDS = CONSUMER_FIELDS as Record<FieldKey, Spec>;
const KEYS = Object.keys(FIELDS) as FieldKey[];
const on = (k: FieldKey, surface: 'runtime' | 'nest') => FIELDS[k].on.includes(surface);
const configurable = (k: FieldKey) => on(k, 'nest') && (FIELDS[k].kind === 'process' || FIELDS[k].kind === 'group');

/** A valid value of every field, none of them its default: a field added to the declaration needs one here. */
const SAMPLES: { [K in FieldKey]-?: Exclude<ConsumerFields[K], undefined> } = {
  stream: 'orders',
  group: 'billing',
  instance: 'second',
  maxDemand: 7,
  concurrency: 3,
  partitions: [0, 2],
  leaseMs: 5000,
  pollMs: 100,
  consumerId: 'billing-1',
  drainTimeoutMs: 500,
  maxAttempts: 3,
  retry: { initialMs: 10, factor: 3, maxMs: 100 },
  ordering: 'partition',
  keyConcurrency: 3,
  groupConcurrency: 4,
  rateLimit: { max: 10, perMs: 1000 },
  start: 'end',
  timeoutMs: 1000,
  onTimeout: 'dead-letter',
  batch: { size: 2, maxWaitMs: 10 },
  transactional: true,
  broadcast: true,
  broadcastTtlMs: 1000,
};
/** What a field needs beside it to be valid (a ttl applies to a broadcast consumer only). */
const ALONGSIDE: Partial<Record<FieldKey, Record<string, unknown>>> = { broadcastTtlMs: { broadcast: true } };

const IDENTITY = { stream: 'orders', group: 'billing' };
const HANDLER = 'BillingController.charge';

function thrown(fn: () => unknown): RheoError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RheoError);
    return err as RheoError;
  }
  throw new Error('expected a RheoError');
}

/** Where a resolved Nest consumer carries a field (the runtime's options, the group's creation, the broadcast membership). */
function carried(resolved: ReturnType<typeof resolveConsumer>, k: FieldKey): unknown {
  if (on(k, 'runtime')) return (resolved.run as Record<string, unknown>)[k];
  if (FIELDS[k].kind === 'group') return (resolved.group as Record<string, unknown>)[k];
  if (k === 'broadcast') return resolved.broadcast !== undefined;
  if (k === 'broadcastTtlMs') return resolved.broadcast?.ttlMs;
  throw new Error(`the test does not know where ${k} goes`);
}

function validKeysOf(message: string): string[] {
  const m = /\(use ([^)]*)\)$/.exec(message);
  expect(m).not.toBeNull();
  return m![1].split(', ');
}

describe('consumer settings: every field where its declaration says', () => {
  const decoratorKeys = KEYS.filter((k) => on(k, 'nest'));
  const configKeys = KEYS.filter(configurable);
  const runtimeKeys = KEYS.filter((k) => on(k, 'runtime'));

  it('the declaration names every kind and surface the APIs use', () => {
    expect(configKeys).toEqual(expect.arrayContaining(['maxDemand', 'maxAttempts', 'broadcastTtlMs']));
    expect(KEYS.filter((k) => FIELDS[k].kind === 'handler')).toEqual(['batch', 'transactional', 'broadcast']);
    expect(KEYS.filter((k) => FIELDS[k].kind === 'group')).toEqual([
      'maxAttempts',
      'retry',
      'ordering',
      'keyConcurrency',
      'groupConcurrency',
      'rateLimit',
      'start',
    ]);
  });

  describe.each(KEYS.filter((k) => on(k, 'nest') && FIELDS[k].kind !== 'identity'))('%s on @RheoConsumer', (k) => {
    it('reaches the consumer', () => {
      const resolved = resolveConsumer(HANDLER, { ...IDENTITY, ...ALONGSIDE[k], [k]: SAMPLES[k] } as RheoConsumerOptions, {});
      expect(carried(resolved, k)).toEqual(k === 'broadcast' ? true : SAMPLES[k]);
      expect(resolved.sources).toEqual({});
    });
  });

  it('instance and stream/group on @RheoConsumer reach the transport the handler is registered with', () => {
    class C {
      m() {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(C.prototype, 'm')!;
    RheoConsumer({ ...IDENTITY, instance: SAMPLES.instance })(C.prototype, 'm', descriptor);
    expect(Reflect.getMetadata('microservices:transport', descriptor.value)).toBe(rheoTransportId(SAMPLES.instance));
    expect(Reflect.getMetadata(RHEO_CONSUMER_METADATA, descriptor.value).options).toMatchObject(IDENTITY);
    const resolved = resolveConsumer(HANDLER, IDENTITY, {});
    expect([resolved.run.stream, resolved.run.group, resolved.key]).toEqual(['orders', 'billing', 'orders/billing']);
  });

  describe.each(configKeys)("%s in the module's defaults and consumers", (k) => {
    it('reaches the consumer, blamed on where it came from', () => {
      const decorated = { ...IDENTITY, ...ALONGSIDE[k] } as RheoConsumerOptions;
      const settings = { [k]: SAMPLES[k] } as RheoConsumerSettings;
      const fromDefaults = resolveConsumer(HANDLER, decorated, { defaults: settings });
      expect(carried(fromDefaults, k)).toEqual(SAMPLES[k]);
      expect(fromDefaults.sources).toEqual({ [k]: 'defaults' });
      const fromConsumers = resolveConsumer(HANDLER, decorated, { consumers: { 'orders/billing': settings } });
      expect(carried(fromConsumers, k)).toEqual(SAMPLES[k]);
      expect(fromConsumers.sources).toEqual({ [k]: 'consumers["orders/billing"]' });
    });
  });

  describe.each(KEYS.filter((k) => !configurable(k)))("%s in the module's defaults and consumers", (k) => {
    it('is refused, naming the field and the keys configuration takes', () => {
      for (const [options, field] of [
        [{ defaults: { [k]: SAMPLES[k] } }, `defaults.${k}`],
        [{ consumers: { 'orders/billing': { [k]: SAMPLES[k] } } }, `consumers["orders/billing"].${k}`],
      ] as const) {
        const err = thrown(() => resolveConsumer(HANDLER, IDENTITY, options as never));
        expect(err.code).toBe('invalid_argument');
        expect(err.field).toBe(field);
        expect(err.message.startsWith(`${HANDLER}: ${field} is`)).toBe(true);
        expect(validKeysOf(err.message)).toEqual(configKeys);
      }
    });
  });

  describe.each(KEYS.filter((k) => !on(k, 'nest')))('%s on @RheoConsumer', (k) => {
    it('is refused, naming the field and the keys the decorator takes', () => {
      const err = thrown(() => resolveConsumer(HANDLER, { ...IDENTITY, [k]: SAMPLES[k] } as RheoConsumerOptions, {}));
      expect(err.field).toBe(`options.${k}`);
      expect(err.message).toMatch(new RegExp(`^${HANDLER}: options\\.${k} is not a consumer option`));
      expect(validKeysOf(err.message)).toEqual(decoratorKeys);
    });
  });

  describe.each(runtimeKeys.filter((k) => FIELDS[k].kind !== 'identity'))("%s in the runtime's options", (k) => {
    it('reaches the consumer', () => {
      expect((resolveGroupOptions({ ...IDENTITY, [k]: SAMPLES[k] }) as unknown as Record<string, unknown>)[k]).toEqual(SAMPLES[k]);
    });
  });

  describe.each(KEYS.filter((k) => !on(k, 'runtime')))("%s in the runtime's options", (k) => {
    it('is refused, naming the field and the keys the runtime takes', () => {
      const err = thrown(() => resolveGroupOptions({ ...IDENTITY, [k]: SAMPLES[k] }));
      expect(err.field).toBe(`options.${k}`);
      expect(err.message).toMatch(new RegExp(`^options\\.${k} is not a Consumer option`));
      expect(validKeysOf(err.message)).toEqual(runtimeKeys);
      const rheo = new Rheo(new MemoryBackend());
      expect(thrown(() => new Consumer(rheo, { ...IDENTITY, [k]: SAMPLES[k] } as never, async () => undefined)).field).toBe(`options.${k}`);
    });
  });

  it('the runtime Consumer takes every runtime field at once (batch and transactional apart: they exclude each other)', () => {
    const rheo = new Rheo(new MemoryBackend());
    const all = Object.fromEntries(runtimeKeys.filter((k) => k !== 'transactional').map((k) => [k, SAMPLES[k]]));
    expect(() => new Consumer(rheo, all as never, async () => undefined)).not.toThrow();
    expect(() => resolveGroupOptions({ ...all, batch: undefined, transactional: true })).not.toThrow();
  });

  it('a bad value is refused by the one validator, whichever API it came through', () => {
    for (const k of ['maxDemand', 'maxAttempts', 'broadcastTtlMs', 'ordering'] as const) {
      const bad = k === 'ordering' ? 'sorted' : 0;
      const expected = thrown(() => FIELDS[k].check(k, bad)).message;
      const decorated = { ...IDENTITY, ...ALONGSIDE[k] } as RheoConsumerOptions;
      expect(thrown(() => resolveConsumer(HANDLER, { ...decorated, [k]: bad }, {})).message).toBe(`${HANDLER}: ${expected}`);
      expect(thrown(() => resolveConsumer(HANDLER, decorated, { defaults: { [k]: bad } })).field).toBe(`defaults.${k}`);
      if (on(k, 'runtime')) expect(thrown(() => resolveGroupOptions({ ...IDENTITY, [k]: bad })).message).toBe(expected);
    }
  });
});

describe('consumer settings: the defaults are the table', () => {
  /** The docs table, by option: its cells. */
  function docRows(): Map<string, string[]> {
    const rows = new Map<string, string[]>();
    for (const line of readFileSync(join(__dirname, '..', '..', TABLE_DOC), 'utf8').split('\n')) {
      const m = /^\| `(\w+)` +\|(.*)\|$/.exec(line);
      if (m)
        rows.set(
          m[1],
          m[2].split('|').map((c) => c.trim()),
        );
    }
    return rows;
  }
  const written = (v: unknown) => (typeof v === 'number' ? String(v) : typeof v === 'string' ? `\`'${v}'\`` : `\`${String(v)}\``);

  it('every field has its row, and a literal default is the one the row writes', () => {
    const rows = docRows();
    expect([...rows.keys()]).toEqual(KEYS);
    for (const k of KEYS) {
      const d = FIELDS[k].default;
      if (d === undefined || typeof d === 'function' || typeof d === 'object') continue;
      expect([k, rows.get(k)![0].split(' ')[0]]).toEqual([k, written(d)]);
    }
    expect(rows.get('retry')![0]).toBe('`{ initialMs: 1000, factor: 2, maxMs: 60000 }`');
    expect(rows.get('stream')![0]).toBe('required');
  });

  it('the runtime applies the declared defaults', () => {
    const resolved = resolveGroupOptions(IDENTITY) as unknown as Record<string, unknown>;
    for (const k of KEYS.filter((k) => on(k, 'runtime') && FIELDS[k].default !== undefined && typeof FIELDS[k].default !== 'function'))
      expect([k, resolved[k]]).toEqual([k, defaultOf(k)]);
    expect(resolved.consumerId).toEqual(expect.any(String));
    expect([resolved.partitions, resolved.timeoutMs, resolved.batch]).toEqual([undefined, undefined, undefined]);
  });

  it("a Nest consumer's group is created with the declared group defaults, and a broadcast one with the declared ttl", async () => {
    const rheo = new Rheo(new MemoryBackend());
    await rheo.createStream('orders');
    const first = await rheo.append('orders', { payload: { n: 1 } });
    const resolved = resolveConsumer(HANDLER, IDENTITY, {});
    const config = await rheo.createGroup('orders', 'billing', resolved.group);
    for (const k of ['maxAttempts', 'retry', 'ordering'] as const) expect([k, config[k]]).toEqual([k, defaultOf(k)]);
    // Start 'beginning': the event appended before the group is delivered.
    expect(defaultOf('start')).toBe('beginning');
    expect((await rheo.fetch('orders', 'billing', { limit: 1 })).map((l) => l.event.id)).toEqual([first.id]);
    expect(resolveConsumer(HANDLER, { ...IDENTITY, broadcast: true }, {}).broadcast).toEqual({ ttlMs: defaultOf('broadcastTtlMs') });
    await rheo.close();
  });
});

describe('consumer settings: the docs table check', () => {
  const doc = readFileSync(join(__dirname, '..', '..', TABLE_DOC), 'utf8');

  it('passes on the document as it is, and on the table unpadded', () => {
    expect(tableDifference(doc)).toBeUndefined();
    expect(tableDifference(withTable(doc))).toBeUndefined();
    expect(withTable(doc)).toContain(optionsTable());
  });

  it('names the first row that differs', () => {
    const changed = doc.replace(/^(\| `concurrency` +\| )1 /m, '$12 ');
    expect(changed).not.toBe(doc);
    expect(tableDifference(changed)).toMatch(
      /^consumer options table: row `concurrency` differs from CONSUMER_FIELDS: has "\| `concurrency` \| 2 \|/,
    );
    const reworded = doc.replace('most handlers running at once', 'most handlers at once');
    expect(tableDifference(reworded)).toMatch(/row `concurrency` differs/);
    const bothChanged = reworded.replace('deliveries before dead-lettering', 'attempts');
    expect(tableDifference(bothChanged)).toMatch(/row `concurrency` differs/);
  });

  it('names a missing row, a row of no option, a changed header, missing markers', () => {
    const lines = doc.split('\n');
    const without = lines.filter((l) => !l.startsWith('| `leaseMs`')).join('\n');
    expect(tableDifference(without)).toMatch(/row `leaseMs` differs|row `pollMs` differs/);
    const last = lines.findIndex((l) => l.startsWith('| `broadcastTtlMs`'));
    expect(tableDifference([...lines.slice(0, last), ...lines.slice(last + 1)].join('\n'))).toMatch(/row `broadcastTtlMs` is missing/);
    const extra = [...lines.slice(0, last + 1), '| `bogus` | 1 | per process | `Consumer` | nothing |', ...lines.slice(last + 1)];
    expect(tableDifference(extra.join('\n'))).toMatch(/row `bogus` is not a consumer option/);
    expect(tableDifference(doc.replace('| option ', '| name '))).toMatch(/the header differs/);
    expect(tableDifference(doc.replace('<!-- consumer-options:end -->', ''))).toMatch(/markers .* are missing/);
  });
});
