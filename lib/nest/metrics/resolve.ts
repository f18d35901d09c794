// The `metrics` option, validated, and prom-client loaded, only when it is set:
// an app without metrics never needs prom-client installed.
import type * as Prom from 'prom-client';
import type { Registry } from 'prom-client';
import { RheoError } from '../../core/errors';
import { loadOptionalPeer } from '../../core/optional-peer';
import { checkKeys, checkObject, isName, keySet } from '../../core/validate';
import { DEFAULT_METRICS_PREFIX, type RheoMetricsOptions } from './options';

/** The prom-client module (its types only: the module itself is loaded on demand). */
export type PromClient = typeof Prom;

/** Which groups get gauges: the app's, all, or the (stream, group) readings of each listed key. */
export type GroupSelection = { kind: 'app' } | { kind: 'all' } | { kind: 'listed'; groups: Array<[stream: string, group: string]> };

/** The option, resolved: the loaded prom-client, the registry, the prefix and the gauged groups. */
export interface ResolvedMetrics {
  prom: PromClient;
  registry: Registry;
  prefix: string;
  groups: GroupSelection;
}

const OPTION_KEYS = keySet('a metrics option', ['registry', 'prefix', 'groups']);

// Prometheus metric names: the prefix must keep every name valid.
const METRIC_PREFIX = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** `undefined` when metrics are off (`metrics` absent or `false`); a RheoError naming the field for bad input. */
export function resolveMetricsOptions(value: unknown): ResolvedMetrics | undefined {
  if (value === undefined || value === false) return undefined;
  if (value !== true && (typeof value !== 'object' || value === null))
    throw RheoError.invalid('metrics', 'must be true, false or { registry?, prefix?, groups? }');
  const options = (value === true ? {} : checkObject('metrics', value)) as RheoMetricsOptions;
  checkKeys('metrics', options, OPTION_KEYS);
  const prefix = options.prefix ?? DEFAULT_METRICS_PREFIX;
  if (typeof prefix !== 'string' || (prefix !== '' && !METRIC_PREFIX.test(prefix)))
    throw RheoError.invalid('metrics.prefix', 'must be a string of letters, digits, _ and : not starting with a digit (e.g. "rheo_")');
  if (options.registry !== undefined && !isRegistry(options.registry))
    throw RheoError.invalid('metrics.registry', 'must be a prom-client Registry');
  const groups = groupSelection(options.groups);
  let prom: PromClient;
  try {
    prom = loadOptionalPeer<PromClient>('prom-client', 'metrics', 'prom-client@15');
  } catch (err) {
    // The loader's message says what to install; the field says which option asked for it.
    throw new RheoError('invalid_argument', (err as Error).message, { field: 'metrics', cause: err });
  }
  return { prom, registry: (options.registry as Registry | undefined) ?? prom.register, prefix, groups };
}

function groupSelection(value: unknown): GroupSelection {
  if (value === undefined || value === 'app') return { kind: 'app' };
  if (value === 'all') return { kind: 'all' };
  if (!Array.isArray(value)) throw RheoError.invalid('metrics.groups', "must be 'app', 'all' or an array of 'stream/group' keys");
  const groups: Array<[string, string]> = [];
  value.forEach((key: unknown, i) => {
    const readings = typeof key === 'string' ? keyReadings(key) : [];
    if (readings.length === 0) throw RheoError.invalid(`metrics.groups[${i}]`, "must be a 'stream/group' key (e.g. 'orders/billing')");
    groups.push(...readings);
  });
  return { kind: 'listed', groups };
}

/**
 * Every (stream, group) a `'stream/group'` key can mean: split at each '/' that
 * leaves two valid names (names may hold '/': 'eu/orders/billing' reads as
 * eu + orders/billing and as eu/orders + billing; the groups that exist answer).
 */
function keyReadings(key: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let at = key.indexOf('/'); at !== -1; at = key.indexOf('/', at + 1)) {
    const stream = key.slice(0, at);
    const group = key.slice(at + 1);
    if (isName(stream) && isName(group)) out.push([stream, group]);
  }
  return out;
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
