export { RheoMetrics } from './rheo-metrics';
export type { MetricsRegistry, RheoMetricsOptions } from './options';
