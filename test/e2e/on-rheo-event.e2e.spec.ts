import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, type INestApplication, Injectable } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import {
  getRheoClientToken,
  getRheoServerToken,
  OnRheoEvent,
  RheoClient,
  RheoConsumer,
  RheoError,
  RheoModule,
  RheoReject,
  RheoServer,
  sqliteBackend,
  type RheoEventMap,
} from '../../lib';
import { CapturingLogger } from './log-capture';
import { until } from '../support/until';

const fast = { pollMs: 10, maxAttempts: 2, retry: { initialMs: 1, factor: 1, maxMs: 1 } };

@Controller()
class Consumers {
  @RheoConsumer({ stream: 'orders', group: 'billing', ...fast })
  billing(@Payload() p: { fail?: 'reject' | 'throw' }): void {
    if (p.fail === 'reject') throw new RheoReject('billing says no');
    if (p.fail === 'throw') throw new Error('billing broke');
  }

  @RheoConsumer({ stream: 'orders', group: 'shipping', ...fast })
  shipping(@Payload() p: { fail?: 'reject' }): void {
    if (p.fail === 'reject') throw new RheoReject('shipping says no');
  }

  @RheoConsumer({ stream: 'trail', group: 'archive', instance: 'audit', ...fast })
  archive(): void {
    throw new RheoReject('archive says no');
  }
}

@Injectable()
class Alerts {
  readonly seen: string[] = [];
  readonly deadLetters: Array<RheoEventMap['dead_letter']> = [];
  readonly starts: Array<RheoEventMap['consumer_start']> = [];
  readonly errors: Array<RheoEventMap['handler_error']> = [];
  retries = 0;

  @OnRheoEvent('dead_letter')
  any(e: RheoEventMap['dead_letter']): void {
    this.seen.push(`any ${e.stream}/${e.group} ${e.reason}`);
    this.deadLetters.push(e);
  }

  @OnRheoEvent('dead_letter', { stream: 'orders', group: 'billing' })
  billing(e: RheoEventMap['dead_letter']): void {
    this.seen.push(`billing ${e.stream}/${e.group} ${e.reason}`);
  }

  @OnRheoEvent('dead_letter', { group: 'shipping' })
  shipping(e: RheoEventMap['dead_letter']): void {
    this.seen.push(`shipping ${e.stream}/${e.group} ${e.reason}`);
  }

  @OnRheoEvent('dead_letter', { instance: 'audit' })
  audit(e: RheoEventMap['dead_letter']): void {
    this.seen.push(`audit ${e.stream}/${e.group} ${e.reason}`);
  }

  @OnRheoEvent('consumer_start')
  started(e: RheoEventMap['consumer_start']): void {
    this.starts.push(e);
  }

  @OnRheoEvent('handler_error')
  failed(e: RheoEventMap['handler_error']): void {
    this.errors.push(e);
  }

  /** A listener that throws: logged, and consumption goes on. */
  @OnRheoEvent('retry')
  async broken(): Promise<void> {
    this.retries++;
    throw new Error('listener broke');
  }
}

describe('@OnRheoEvent (SQLite)', () => {
  let dir: string;
  let app: INestApplication;
  let logger: CapturingLogger;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rheo-on-event-'));
    logger = new CapturingLogger();
    const ref = await Test.createTestingModule({
      imports: [
        RheoModule.forRoot({ backend: sqliteBackend({ database: join(dir, 'main.db') }), streams: [{ name: 'orders' }] }),
        RheoModule.forRoot({ name: 'audit', backend: sqliteBackend({ database: join(dir, 'audit.db') }), streams: [{ name: 'trail' }] }),
      ],
      controllers: [Consumers],
      providers: [Alerts],
    }).compile();
    app = ref.createNestApplication({ logger });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    app.connectMicroservice({ strategy: app.get(getRheoServerToken('audit')) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
  });

  afterEach(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers dead_letter to the methods whose stream, group and instance match, and only those', async () => {
    const alerts = app.get(Alerts);
    const main = app.get(RheoClient);
    const audit = app.get<RheoClient>(getRheoClientToken('audit'));
    const rejected = await main.append('orders', { payload: { fail: 'reject' } });
    await audit.append('trail', { payload: {} });
    // Both groups of `orders` dead-letter the one event; the audit instance dead-letters its own.
    await until('three dead letters, five calls', () => alerts.seen.length === 5);
    expect([...alerts.seen].sort()).toEqual([
      'any orders/billing billing says no',
      'any orders/shipping shipping says no',
      'audit trail/archive archive says no',
      'billing orders/billing billing says no',
      'shipping orders/shipping shipping says no',
    ]);
    const billing = alerts.deadLetters.find((e) => e.group === 'billing')!;
    expect(billing).toEqual({
      stream: 'orders',
      group: 'billing',
      handlerName: 'Consumers.billing',
      eventId: rejected.id,
      partition: rejected.partition,
      sequence: rejected.sequence,
      attempt: 1,
      reason: 'billing says no',
      cause: 'rejected',
      maxAttempts: 2,
      lease: expect.objectContaining({ attempt: 1, event: expect.objectContaining({ id: rejected.id }) }),
    });
  });

  it('a throwing listener is logged and consumption goes on; handler_error and dead_letter at max_attempts follow', async () => {
    const alerts = app.get(Alerts);
    const event = await app.get(RheoClient).append('orders', { payload: { fail: 'throw' } });
    await until('dead-lettered after two attempts', () => alerts.deadLetters.some((e) => e.group === 'billing'));
    expect(alerts.retries).toBe(1);
    expect(alerts.deadLetters.find((e) => e.group === 'billing')).toMatchObject({
      eventId: event.id,
      attempt: 2,
      cause: 'max_attempts',
      reason: 'billing broke',
    });
    expect(alerts.errors.map((e) => [e.group, e.attempt, (e.error as Error).message])).toEqual([
      ['billing', 1, 'billing broke'],
      ['billing', 2, 'billing broke'],
    ]);
    await until('listener failure logged', () => logger.lines('error').length > 0);
    expect(logger.lines('error')).toEqual([`[RheoEvents] @OnRheoEvent Alerts.broken ('retry') threw: listener broke`]);
    // The shipping group acked the same event: consumption went on.
    await until('shipping caught up', async () => (await app.get(RheoClient).lag('orders', 'shipping')).lag === 0);
  });

  it('tells consumer_start with the settings, per instance', () => {
    const alerts = app.get(Alerts);
    expect(alerts.starts.map((s) => `${s.stream}/${s.group} ${s.handlerName}`).sort()).toEqual([
      'orders/billing Consumers.billing',
      'orders/shipping Consumers.shipping',
    ]);
    expect(alerts.starts[0].settings).toMatchObject({ maxDemand: 10, concurrency: 1, pollMs: 10, maxAttempts: 2, ordering: 'none' });
  });

  it('refuses an unknown event or a bad option, naming the field', () => {
    const attempt = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return err instanceof RheoError ? `${err.code}:${err.field}` : String(err);
      }
      return 'no error';
    };
    expect(attempt(() => OnRheoEvent('dead_lettered' as 'dead_letter'))).toBe('invalid_argument:event');
    expect(attempt(() => OnRheoEvent('dead_letter', { stream: '' }))).toBe('invalid_argument:stream');
    expect(attempt(() => OnRheoEvent('dead_letter', { groups: 'x' } as never))).toBe('invalid_argument:groups');
    expect(attempt(() => app.get(RheoServer).onRheoEvent('nope' as 'retry', () => undefined))).toBe('invalid_argument:event');
  });
});
