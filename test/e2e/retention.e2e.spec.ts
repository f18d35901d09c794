import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { type Backend, type JsonValue, Rheo, RheoConsumer, RheoError, RheoModule, sqliteBackend } from '../../lib';
import { createMicroservice } from './support';
import { until } from '../support/until';

const handled: JsonValue[] = [];

@Controller()
class AuditController {
  @RheoConsumer({ stream: 'audit', group: 'archive', pollMs: 50 })
  onEvent(@Payload() payload: JsonValue) {
    handled.push(payload);
  }
}

/** The module's retention wiring on a real store (SQLite in a temp dir): declarations, the background trim, validation. */
describe('RheoModule retention', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rheo-retention-e2e-'));
  let n = 0;
  const database = () => join(dir, `db-${++n}.sqlite`);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function start(backend: Backend, options: { trimIntervalMs?: number; retention?: object }) {
    const app = await createMicroservice({
      imports: [
        RheoModule.forRoot({
          backend,
          streams: [{ name: 'audit', retention: options.retention as never }],
          trimIntervalMs: options.trimIntervalMs,
        }),
      ],
      controllers: [AuditController],
    });
    await app.listen();
    return app;
  }

  it('creates a declared stream with its retention, and the transport trims what the consumer finished', async () => {
    handled.length = 0;
    const file = database();
    const app = await start(sqliteBackend({ database: file }), { trimIntervalMs: 50, retention: { maxEvents: 5 } });
    const rheo = new Rheo(sqliteBackend({ database: file }));
    try {
      expect((await rheo.backend.getStream('audit'))?.retention).toEqual({ maxEvents: 5 });
      await rheo.appendBatch(
        'audit',
        Array.from({ length: 20 }, (_, i) => ({ payload: i })),
      );
      await until('all 20 handled', () => handled.length === 20);
      // Trimmed down to the last 5, by the background job alone.
      await until('the background trim', async () => (await rheo.read('audit')).length === 5);
      expect((await rheo.read('audit')).map((e) => e.sequence)).toEqual([16, 17, 18, 19, 20]);
    } finally {
      await app.close();
      await rheo.close();
    }
  });

  it('brings a declared retention to an existing stream, and trims nothing with trimIntervalMs: 0', async () => {
    handled.length = 0;
    const file = database();
    const rheo = new Rheo(sqliteBackend({ database: file }));
    await rheo.createStream('audit', { retention: { maxEvents: 1000 } });
    const app = await start(sqliteBackend({ database: file }), { trimIntervalMs: 0, retention: { maxEvents: 2 } });
    try {
      expect((await rheo.backend.getStream('audit'))?.retention).toEqual({ maxEvents: 2 });
      await rheo.appendBatch(
        'audit',
        Array.from({ length: 6 }, (_, i) => ({ payload: i })),
      );
      await until('all 6 handled', () => handled.length === 6);
      await new Promise((r) => setTimeout(r, 300));
      expect(await rheo.read('audit')).toHaveLength(6);
      // On demand, it still works.
      expect((await rheo.trim('audit')).removed).toBe(4);
    } finally {
      await app.close();
      await rheo.close();
    }
  });

  it.each([
    ['a negative trimIntervalMs', { trimIntervalMs: -1 }, 'trimIntervalMs'],
    ['a retention limit below 1', { streams: [{ name: 'audit', retention: { maxEvents: 0 } }] }, 'streams[0].retention.maxEvents'],
    ['an unknown retention key', { streams: [{ name: 'audit', retention: { maxAge: 1 } }] }, 'streams[0].retention.maxAge'],
  ])('refuses %s naming the field', async (_what, options, field) => {
    let error: unknown;
    try {
      await Test.createTestingModule({
        imports: [RheoModule.forRoot({ backend: sqliteBackend({ database: database() }), ...options } as never)],
      }).compile();
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RheoError);
    expect((error as RheoError).code).toBe('invalid_argument');
    expect((error as RheoError).field).toBe(field);
  });
});
