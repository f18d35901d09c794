import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { RheoError, toRheoError } from '../../core/errors';
import type { GroupInfo } from '../../core/types';
import type { RheoInstance } from '../rheo-instance';
import type { RheoServer } from '../rheo-server';
import { type FiguresScope, GroupFigures, groupsOf } from './group-figures';
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
    const rheo = this.instance.rheo;
    const figures = new GroupFigures(rheo, this.scope(this.resolved));
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

  /** The groups the gauges show, per `metrics.groups`. */
  private scope(resolved: ResolvedMetrics): FiguresScope {
    const selection = resolved.groups;
    if (selection.kind === 'all') return selection;
    if (selection.kind === 'listed') return { kind: 'some', groups: async () => selection.groups };
    // The app's: the groups of its declared streams (other apps' too: they are its streams' readers), then
    // the groups its transport runs (read each round: a broadcast group is named when its consumer starts).
    const rheo = this.instance.rheo;
    return {
      kind: 'some',
      groups: async () => {
        const pairs: Array<[string, string]> = [];
        for (const s of this.instance.streams) for (const group of await groupsOf(rheo, s.name)) pairs.push([s.name, group]);
        for (const g of this.server.unwrap().groups.values()) pairs.push([g.config.stream, g.config.group]);
        return pairs;
      },
    };
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
