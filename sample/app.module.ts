import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RheoDashboardModule, RheoModule } from '../lib';
import { createBackend } from './backend';
import { EventsController } from './events.controller';
import { HealthController } from './health.controller';
import { LocalOnlyGuard } from './local-only.guard';
import { MARKET_EVENTS } from './market';
import { MetricsController } from './metrics.controller';
import { RiskController } from './risk.controller';
import { StatsService } from './stats.service';
import { SurveillanceController } from './surveillance.controller';

@Module({
  imports: [
    // Built at bootstrap (not at import), so the database path can come from the environment.
    // `metrics: true`: Prometheus metrics on prom-client's default registry, served at GET /metrics.
    RheoModule.forRootAsync({
      useFactory: () => ({ backend: createBackend(), streams: [{ name: MARKET_EVENTS, partitions: 4 }], metrics: true }),
    }),
    // The dashboard at /rheo, with redrive / replay / reset enabled, for requests from this machine only.
    RheoDashboardModule.forRoot({ path: '/rheo', readOnly: false, guard: LocalOnlyGuard }),
    TerminusModule,
  ],
  controllers: [EventsController, HealthController, MetricsController, RiskController, SurveillanceController],
  providers: [StatsService],
})
export class AppModule {}
