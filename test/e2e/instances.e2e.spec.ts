import { Controller, type INestApplication, Injectable, Module } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import {
  getRheoServerToken,
  InjectRheo,
  InjectRheoClient,
  memoryBackend,
  Rheo,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoModule,
  RheoServer,
  type Consumer,
  type JsonValue,
} from '../../lib';
import type { RheoServerInternals } from '../../lib/nest/rheo-server';
import { until } from '../support/until';

const seen: string[] = [];

/** Stands in for @nestjs/config: settings read at startup. */
@Injectable()
class Settings {
  readonly values = { riskConcurrency: 3, riskMaxDemand: 7, defaultLeaseMs: 20_000 };
}

@Module({ providers: [Settings], exports: [Settings] })
class SettingsModule {}

@Controller()
class TradesController {
  @RheoConsumer({ stream: 'trades', group: 'risk', maxDemand: 2, concurrency: 1, pollMs: 10 })
  onRisk(@Payload() p: JsonValue, @Ctx() ctx: RheoContext) {
    void p;
    seen.push(`default:${ctx.group}:${ctx.event.id}`);
  }

  @RheoConsumer({ stream: 'audit-log', group: 'archive', instance: 'audit', pollMs: 10 })
  onAudit(@Payload() p: JsonValue, @Ctx() ctx: RheoContext) {
    void p;
    seen.push(`audit:${ctx.group}:${ctx.event.id}`);
  }
}

@Injectable()
class Producer {
  constructor(
    readonly main: RheoClient,
    @InjectRheoClient('audit') readonly audit: RheoClient,
    @InjectRheo('audit') readonly auditCore: Rheo,
  ) {}
}

describe('named instances and options from configuration', () => {
  let app: INestApplication;
  const mainBackend = memoryBackend();
  const auditBackend = memoryBackend();

  beforeAll(async () => {
    const ref = await Test.createTestingModule({
      imports: [
        RheoModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (s: Settings) => ({
            backend: mainBackend,
            streams: [{ name: 'trades', partitions: 2 }],
            defaults: { leaseMs: s.values.defaultLeaseMs },
            consumers: { 'trades/risk': { concurrency: s.values.riskConcurrency, maxDemand: s.values.riskMaxDemand } },
          }),
        }),
        RheoModule.forRoot({ name: 'audit', backend: auditBackend, streams: [{ name: 'audit-log' }] }),
      ],
      controllers: [TradesController],
      providers: [Producer],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
    app.connectMicroservice({ strategy: app.get(getRheoServerToken('audit')) }, { inheritAppConfig: true });
    await app.init();
    await app.startAllMicroservices();
  });

  afterAll(async () => {
    await app.close();
  });

  it('gives each instance its own server, store and consumers', async () => {
    const producer = app.get(Producer);
    expect(producer.main).not.toBe(producer.audit);
    expect(producer.auditCore.backend).toBe(auditBackend);
    const trade = await producer.main.append('trades', { key: 'T1', payload: { qty: 5 } });
    const entry = await producer.audit.append('audit-log', { payload: { who: 'ops' } });
    await until('both consumed', () => seen.includes(`default:risk:${trade.id}`) && seen.includes(`audit:archive:${entry.id}`));
    expect(await producer.main.listStreams()).toEqual([expect.objectContaining({ name: 'trades' })]);
    expect(await producer.audit.listStreams()).toEqual([expect.objectContaining({ name: 'audit-log' })]);
    const main = app.get(RheoServer);
    const audit = app.get<RheoServer>(getRheoServerToken('audit'));
    expect(main.consumers().map((c) => c.handlerName)).toEqual(['TradesController.onRisk']);
    expect(audit.consumers().map((c) => c.handlerName)).toEqual(['TradesController.onAudit']);
    expect(main.transportId).not.toBe(audit.transportId);
  });

  it('applies module defaults and per-consumer configuration over decorator literals', () => {
    const { groups } = app.get(RheoServer).unwrap<RheoServerInternals>();
    const risk = groups.get('trades/risk') as Consumer;
    expect(risk.config).toMatchObject({ concurrency: 3, maxDemand: 7, leaseMs: 20_000, pollMs: 10 });
  });
});

describe('forRoot(backend) and isGlobal', () => {
  @Injectable()
  class FeatureService {
    constructor(
      readonly client: RheoClient,
      readonly core: Rheo,
    ) {}
  }

  @Module({ providers: [FeatureService], exports: [FeatureService] })
  class FeatureModule {}

  it('accepts a bare backend and, when global, serves modules that do not import it', async () => {
    let backend = memoryBackend();
    const ref = await Test.createTestingModule({
      imports: [
        RheoModule.forRoot(backend),
        RheoModule.forRoot({ name: 'other', backend: memoryBackend(), isGlobal: true }),
        FeatureModule,
      ],
    })
      .compile()
      .catch((err: Error) => err);
    // The default instance is not global: FeatureModule cannot see it.
    expect(ref).toBeInstanceOf(Error);
    expect((ref as Error).message).toMatch(/FeatureService/);

    const positional = await Test.createTestingModule({ imports: [RheoModule.forRoot(backend)], providers: [FeatureService] }).compile();
    expect(positional.get(FeatureService).core.backend).toBe(backend);
    await positional.close(); // closes the backend: the next app gets a fresh one
    backend = memoryBackend();

    const globalRef = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend, isGlobal: true }), FeatureModule],
    }).compile();
    const feature = globalRef.get(FeatureService);
    expect(feature.core.backend).toBe(backend);
    await feature.client.createStream('s');
    expect(await feature.client.listStreams()).toEqual([expect.objectContaining({ name: 's', partitions: 1 })]);
    await globalRef.close();
  });
});
