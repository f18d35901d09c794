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
}

export const DEFAULT_METRICS_PREFIX = 'rheo_';
