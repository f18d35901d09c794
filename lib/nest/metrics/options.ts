// The public shape of the `metrics` option. Written without prom-client's types,
// so the published typings compile for apps that never install prom-client
// (as the drivers' shapes are in lib/backends/*/external.ts).

/** The part of a prom-client `Registry` nestjs-rheo relies on: pass a prom-client `Registry`. */
export interface MetricsRegistry {
  getSingleMetric(name: string): unknown;
  removeSingleMetric(name: string): void;
  registerMetric(metric: never): void;
  metrics(): Promise<string>;
}

/** The `metrics` option of `RheoModule.forRoot`: `true` for the defaults, or where and how to register. */
export interface RheoMetricsOptions {
  /** The prom-client registry to register on. Default: prom-client's default `register`. */
  registry?: MetricsRegistry;
  /** Prepended to every metric name. Default `'rheo_'`. */
  prefix?: string;
  /**
   * Which groups get the per-group gauges (`rheo_group_lag`, `…_inflight`,
   * `…_dead_letters`, `…_oldest_unsettled_age_seconds`), read at scrape time:
   * - `'app'` (the default): the groups of the streams this instance declares
   *   (`streams`) and the groups its transport consumes (`@RheoConsumer`, a
   *   broadcast consumer's group of this process included);
   * - `'all'`: every group of every stream in the store (one series per group and
   *   gauge, and a read per group each scrape: mind a store of many groups);
   * - a list of `'stream/group'` keys (as in `consumers`): those groups, when they exist.
   */
  groups?: MetricsGroups;
}

/** The `metrics.groups` option: `'app'`, `'all'`, or `'stream/group'` keys. */
export type MetricsGroups = 'app' | 'all' | readonly string[];

export const DEFAULT_METRICS_PREFIX = 'rheo_';
