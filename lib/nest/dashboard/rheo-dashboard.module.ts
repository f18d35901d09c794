import { type DynamicModule, Module } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DashboardActionGuard } from './action.guard';
import { createDashboardController } from './dashboard.controller';
import { type RheoDashboardOptions, resolveDashboardOptions, type ResolvedDashboardOptions } from './dashboard-options';
import { DASHBOARD_OPTIONS, DASHBOARD_SERVICE, DashboardService } from './dashboard-service';

/**
 * A web page, served by the host Nest app (Express or Fastify), showing an
 * instance's streams and groups (lag, inflight, dead letters, oldest unsettled
 * age, the local consumer's state, a lag chart) and a group's dead letters, with
 * redrive, replay and reset when `readOnly: false`; and the JSON API under
 * `<path>/api/` that the page uses. Import it next to `RheoModule`:
 *
 * ```ts
 * RheoDashboardModule.forRoot({ path: '/rheo', guard: OpsOnlyGuard })
 * ```
 *
 * Read-only by default; action POSTs need the header `x-rheo-dashboard: 1`; the
 * `guard` protects page and API alike. Nothing is fetched from outside the app.
 */
@Module({})
export class RheoDashboardModule {
  /** One dashboard; several (other paths, other instances) may be imported side by side. */
  static forRoot(options: RheoDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: RheoDashboardModule,
      imports: resolved.imports,
      controllers: [createDashboardController(resolved)],
      providers: [
        { provide: DASHBOARD_OPTIONS, useValue: resolved },
        {
          provide: DASHBOARD_SERVICE,
          useFactory: (o: ResolvedDashboardOptions, moduleRef: ModuleRef) => new DashboardService(o, moduleRef),
          inject: [DASHBOARD_OPTIONS, ModuleRef],
        },
        DashboardActionGuard,
      ],
    };
  }
}
