import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RheoHealthIndicator } from '../lib';

@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly rheo: RheoHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.rheo.isHealthy('rheo', { maxLag: 1000 })]);
  }
}
