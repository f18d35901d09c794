// The /health endpoint the health specs mount: one Terminus check of the Rheo indicator.
// Its own file, not support.ts: every e2e spec imports support.ts, and not all of them may load Terminus.
import { Controller, Get, type Type } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RheoHealthIndicator } from '../../lib';

/** A controller serving `GET /health` with `isHealthy('rheo', options)`. */
export function healthController(options: Parameters<RheoHealthIndicator['isHealthy']>[1]): Type<unknown> {
  @Controller()
  class HealthController {
    constructor(
      private readonly health: HealthCheckService,
      private readonly rheo: RheoHealthIndicator,
    ) {}

    @Get('health')
    @HealthCheck()
    check() {
      return this.health.check([() => this.rheo.isHealthy('rheo', options)]);
    }
  }
  return HealthController;
}
