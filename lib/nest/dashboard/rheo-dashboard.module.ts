import { type DynamicModule, Inject, type MiddlewareConsumer, Module, type NestModule, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DashboardActionGuard } from './action.guard';
import { createDashboardController } from './dashboard.controller';
import { type RheoDashboardOptions, resolveDashboardOptions, type ResolvedDashboardOptions } from './dashboard-options';
import { DASHBOARD_OPTIONS, DASHBOARD_SERVICE, DashboardService } from './dashboard-service';

/** Injection token of the controller class a dashboard module made (its routes get the headers below). */
const DASHBOARD_CONTROLLER = 'RheoDashboardController';

/**
 * Every answer of the dashboard's routes, set before guards, handlers and
 * exception filters run: so the JSON API's errors (a guard's 403, a filter's
 * 400/404, Nest's own 500) carry it as its answers do. A middleware is the one
 * step all of them pass; `@Header` applies to a handler's own answer only.
 */
function noSniff(_req: unknown, res: { setHeader(name: string, value: string): unknown }, next: () => void): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}

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
export class RheoDashboardModule implements NestModule {
  constructor(@Inject(DASHBOARD_CONTROLLER) private readonly controller: Type<unknown>) {}

  /** The headers every answer of this dashboard carries (a module instance per forRoot, each with its controller). */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(noSniff).forRoutes(this.controller);
  }

  /** One dashboard; several (other paths, other instances) may be imported side by side. */
  static forRoot(options: RheoDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    const controller = createDashboardController(resolved);
    return {
      module: RheoDashboardModule,
      imports: resolved.imports,
      controllers: [controller],
      providers: [
        { provide: DASHBOARD_CONTROLLER, useValue: controller },
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
