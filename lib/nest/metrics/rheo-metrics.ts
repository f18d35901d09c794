import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { RheoError, toRheoError } from '../../core/errors';
import type { GroupInfo } from '../../core/types';
import type { RheoInstance } from '../rheo-instance';
import type { RheoServer } from '../rheo-server';
import { GroupFigures } from './group-figures';
import { InstanceScope } from './instance-scope';
import { MetricSet, type MetricsSource } from './metric-set';
import { resolveMetricsOptions, type ResolvedMetrics } from './resolve';

/**
 * The Prometheus metrics of one instance, when its `metrics` option is set
 * (inert otherwise: prom-client is then never loaded). Joins the metric set of
 * its registry and prefix on module init, leaves it once the transport has
 * drained on shutdown (so the drain's settles are counted).
 */
export class RheoMetrics implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RheoMetrics');
  private readonly resolved?: ResolvedMetrics;
  private source?: MetricsSource;
  private set?: MetricSet;
  private failing = false;

  constructor(
    private readonly instance: RheoInstance,
    private readonly server: RheoServer,
  ) {
    try {
      this.resolved = resolveMetricsOptions(instance.options.metrics);
    } catch (err) {
      const e = toRheoError(err);
      throw new RheoError(e.code, `RheoModule(${instance.name}): ${e.message}`, { field: e.field, cause: err });
    }
  }

  onModuleInit(): void {
    if (!this.resolved || this.set) return;
    const scope = new InstanceScope(this.instance, this.server);
    const figures = new GroupFigures(this.instance.rheo);
    const rheo = this.instance.rheo;
    this.source = {
      ownsConsumer: (id) => scope.ownsConsumer(id),
      ownsRheo: (id) => scope.ownsRheo(id),
      consumersChanged: () => scope.consumersChanged(),
      now: () => rheo.backend.clock.now(),
      groupFigures: () => this.read(figures),
      figuresFailed: (err) => this.failed(err),
    };
    this.set = MetricSet.attach(this.resolved, this.source);
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.set || !this.source) return;
    await this.server.close().catch(() => undefined);
    this.set.detach(this.source);
    this.set = undefined;
  }

  private async read(figures: GroupFigures): Promise<GroupInfo[]> {
    const result = await figures.read();
    if (this.failing) this.logger.log(`${this.instance.name}: group figures read again`);
    this.failing = false;
    return result;
  }

  // One warning per burst of failures (each scrape's four gauges would otherwise say it four times).
  private failed(err: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.logger.warn(`${this.instance.name}: the group gauges are left out of this scrape: ${toRheoError(err).message}`);
  }
}
