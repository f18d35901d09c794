import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';

/**
 * GET /metrics for Prometheus: everything on prom-client's default registry,
 * which is where `RheoModule.forRoot({ metrics: true })` registers nestjs-rheo's
 * counters, histograms and group gauges.
 */
@Controller()
export class MetricsController {
  @Get('metrics')
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return register.metrics();
  }
}
