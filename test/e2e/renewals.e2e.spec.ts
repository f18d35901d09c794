import { Controller, type INestApplication, type LoggerService } from '@nestjs/common';
import { Ctx } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { RheoClient, RheoConsumer, RheoContext, RheoError, RheoHealthIndicator, RheoModule, RheoServer } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';
import { FaultyBackend } from '../support/faulty-backend';
import { until } from '../support/until';

/** Keeps every warning the app logs. */
class CapturingLogger implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(): void {}
  debug(): void {}
  verbose(): void {}
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

const seen: { ctx: RheoContext | null; firstExpiry: number; aborted: unknown } = { ctx: null, firstExpiry: 0, aborted: null };
let release: () => void = () => undefined;

@Controller()
class SlowController {
  @RheoConsumer({ stream: 'slow', group: 'g', leaseMs: 300, pollMs: 10, maxDemand: 3, concurrency: 3 })
  async onEvent(@Ctx() ctx: RheoContext) {
    seen.ctx = ctx;
    seen.firstExpiry = ctx.leaseExpiresAt.getTime();
    await new Promise<void>((resolve) => {
      release = resolve;
      ctx.signal.addEventListener('abort', () => {
        seen.aborted = ctx.signal.reason;
        resolve();
      });
    });
  }
}

describe('RheoServer: lease renewals seen from Nest', () => {
  let app: INestApplication;
  let backend: FaultyBackend;
  const logger = new CapturingLogger();

  beforeEach(async () => {
    seen.ctx = null;
    seen.aborted = null;
    backend = new FaultyBackend(new MemoryBackend());
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend, streams: [{ name: 'slow' }] })],
      controllers: [SlowController],
    }).compile();
    app = ref.createNestApplication({ logger });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
  });

  afterEach(async () => {
    release();
    await app.close();
  });

  it('moves ctx.leaseExpiresAt with each renewal', async () => {
    await app.get(RheoClient).append('slow', { payload: { n: 1 } });
    await until('handler running', () => seen.ctx);
    await until('renewed', () => seen.ctx!.leaseExpiresAt.getTime() > seen.firstExpiry);
    expect(seen.ctx!.lease.expiresAt.getTime()).toBe(seen.ctx!.leaseExpiresAt.getTime());
  });

  it('surfaces failing renewals: one warning per burst, renew_error events, consumer state and /health down; then recovery', async () => {
    const server = app.get(RheoServer);
    const events: string[] = [];
    // (The lease count of a round varies: a lease that expires meanwhile is fetched again.)
    server.on('renew_error', (ref, error, _leases, consecutive) => events.push(`${ref.group}:${error.code}:${consecutive}`));
    server.on('renew_recovered', (ref) => events.push(`${ref.group}:recovered`));
    const warningsBefore = logger.warnings.length;
    backend.failRenewCall(4, 'backend_unavailable');
    await app.get(RheoClient).append('slow', { payload: { n: 1 } });
    await until('handler running', () => seen.ctx);
    await until('renewal failing', () => server.consumers()[0].renewError);
    expect(server.consumers()[0].renewError?.code).toBe('backend_unavailable');
    const health = await app.get(RheoHealthIndicator).isHealthy('rheo');
    expect(health.rheo.status).toBe('down');
    expect(health.rheo.failing).toEqual([expect.stringMatching(/^slow\/g: lease renewals failing: injected fault/)]);
    expect((health.rheo.groups as Record<string, { renewals?: string }>)['slow/g'].renewals).toMatch(/^failing: /);
    await until('recovered', () => events.includes('g:recovered'));
    expect(events).toEqual([
      'g:backend_unavailable:1',
      'g:backend_unavailable:2',
      'g:backend_unavailable:3',
      'g:backend_unavailable:4',
      'g:recovered',
    ]);
    const renewWarnings = logger.warnings.slice(warningsBefore).filter((w) => w.includes('renewing'));
    expect(renewWarnings).toHaveLength(1);
    expect(server.consumers()[0].renewError).toBeNull();
    expect((await app.get(RheoHealthIndicator).isHealthy('rheo')).rheo.status).toBe('up');
  });

  it('aborts ctx.signal when the lease is lost', async () => {
    const [e] = await app.get(RheoClient).appendBatch('slow', [{ payload: { n: 1 } }]);
    backend.loseOnRenew(e.id, 1);
    await until('aborted', () => seen.aborted);
    expect(seen.aborted).toBeInstanceOf(RheoError);
    expect((seen.aborted as RheoError).code).toBe('stale_lease');
  });
});
