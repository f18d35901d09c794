// The `metrics` option, validated, and prom-client loaded, only when it is set:
// an app without metrics never needs prom-client installed.
import type * as Prom from 'prom-client';
import type { Registry } from 'prom-client';
import { RheoError } from '../../core/errors';
import { loadOptionalPeer } from '../../core/optional-peer';
import { checkObject } from '../../core/validate';
import { DEFAULT_METRICS_PREFIX, type RheoMetricsOptions } from './options';

/** The prom-client module (its types only: the module itself is loaded on demand). */
export type PromClient = typeof Prom;

/** The option, resolved: the loaded prom-client, the registry and the prefix. */
export interface ResolvedMetrics {
  prom: PromClient;
  registry: Registry;
  prefix: string;
}

// Prometheus metric names: the prefix must keep every name valid.
const METRIC_PREFIX = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** `undefined` when metrics are off (`metrics` absent or `false`); a RheoError naming the field for bad input. */
export function resolveMetricsOptions(value: unknown): ResolvedMetrics | undefined {
  if (value === undefined || value === false) return undefined;
  if (value !== true && (typeof value !== 'object' || value === null))
    throw RheoError.invalid('metrics', 'must be true, false or { registry?, prefix? }');
  const options = (value === true ? {} : checkObject('metrics', value)) as RheoMetricsOptions;
  for (const key of Object.keys(options))
    if (key !== 'registry' && key !== 'prefix') throw RheoError.invalid(`metrics.${key}`, 'is not a metrics option (use registry, prefix)');
  const prefix = options.prefix ?? DEFAULT_METRICS_PREFIX;
  if (typeof prefix !== 'string' || (prefix !== '' && !METRIC_PREFIX.test(prefix)))
    throw RheoError.invalid('metrics.prefix', 'must be a string of letters, digits, _ and : not starting with a digit (e.g. "rheo_")');
  if (options.registry !== undefined && !isRegistry(options.registry))
    throw RheoError.invalid('metrics.registry', 'must be a prom-client Registry');
  let prom: PromClient;
  try {
    prom = loadOptionalPeer<PromClient>('prom-client', 'metrics', 'prom-client@15');
  } catch (err) {
    // The loader's message says what to install; the field says which option asked for it.
    throw new RheoError('invalid_argument', (err as Error).message, { field: 'metrics', cause: err });
  }
  return { prom, registry: (options.registry as Registry | undefined) ?? prom.register, prefix };
}

function isRegistry(value: unknown): boolean {
  const r = value as Partial<Record<'getSingleMetric' | 'removeSingleMetric' | 'registerMetric' | 'metrics', unknown>> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.getSingleMetric === 'function' &&
    typeof r.removeSingleMetric === 'function' &&
    typeof r.registerMetric === 'function' &&
    typeof r.metrics === 'function'
  );
}
