// A consumer's group at startup, against the settings its options declare
// (docs/adr/047-changing-a-group-in-place.md): created with them when it does not
// exist; when it exists and differs, either left as it is with a warning
// (`groupSettings: 'create'`, the default) or brought in line by updateGroup, each
// change logged (`'apply'`). Ordering cannot change in place, nor can a key limit be
// added to a group without one or removed from it: those only warn.
import type { Rheo } from '../core/rheo';
import type { GroupChanges, GroupConfig, GroupOptions, RateLimit, RetryBackoff } from '../core/types';

/** What `RheoModule.forRoot({ groupSettings })` does with an existing group whose stored settings differ from the declared ones. */
export type GroupSettingsMode = 'create' | 'apply';

/** The module option's values, as its check lists them. */
export const GROUP_SETTINGS_MODES: readonly GroupSettingsMode[] = ['create', 'apply'];

/** Where the lines go: the transport's logger. */
interface Lines {
  log(message: string): void;
  warn(message: string): void;
}

/** One declared setting that differs from the stored group: its name, stored value, declared value. */
interface Difference {
  name: string;
  stored: unknown;
  declared: unknown;
}

const RETRY_FIELDS = ['initialMs', 'factor', 'maxMs'] as const;

/** The declared settings that differ from the stored group (only those declared: a setting left out is not compared). */
export function groupDifferences(declared: GroupOptions, config: GroupConfig): Difference[] {
  const out: Difference[] = [];
  if (declared.maxAttempts !== undefined && declared.maxAttempts !== config.maxAttempts)
    out.push({ name: 'maxAttempts', stored: config.maxAttempts, declared: declared.maxAttempts });
  const retry: RetryBackoff = declared.retry ?? {};
  for (const f of RETRY_FIELDS) {
    if (retry[f] !== undefined && retry[f] !== config.retry[f])
      out.push({ name: `retry.${f}`, stored: config.retry[f], declared: retry[f] });
  }
  if (declared.ordering !== undefined && declared.ordering !== config.ordering)
    out.push({ name: 'ordering', stored: config.ordering, declared: declared.ordering });
  for (const f of ['keyConcurrency', 'groupConcurrency'] as const) {
    if (declared[f] !== undefined && declared[f] !== config[f]) out.push({ name: f, stored: config[f], declared: declared[f] });
  }
  const rate = declared.rateLimit;
  if (rate !== undefined && (rate.max !== config.rateLimit?.max || rate.perMs !== config.rateLimit?.perMs))
    out.push({ name: 'rateLimit', stored: config.rateLimit, declared: rate });
  return out;
}

/** A setting's value in a line: `none` for a limit the group does not have, `10/1000ms` for a rate limit. */
function shown(value: unknown): string {
  if (value === null) return 'none';
  if (typeof value === 'object') {
    const r = value as RateLimit;
    return `${r.max}/${r.perMs}ms`;
  }
  return String(value);
}

/** What updateGroup cannot change in place: ordering, and a key limit added or removed (its number may change). */
function inPlace(d: Difference): boolean {
  if (d.name === 'ordering') return false;
  if (d.name === 'keyConcurrency') return d.stored !== null;
  return true;
}

const FIXED_REASON: Record<string, string> = {
  ordering: 'ordering cannot change in place (deliveries in flight would break it)',
  keyConcurrency: 'keyConcurrency cannot be added in place (deliveries already open were not counted by key)',
};

/**
 * The group of one consumer, created if missing, then compared with what it
 * declares. Returns the group as stored once startup is done with it.
 */
export async function declaredGroup(
  rheo: Rheo,
  lines: Lines,
  mode: GroupSettingsMode,
  c: { handlerName: string; key: string; stream: string; group: string; declared: GroupOptions },
): Promise<GroupConfig> {
  const config = await rheo.createGroup(c.stream, c.group, c.declared);
  const differs = groupDifferences(c.declared, config);
  if (differs.length === 0) return config;
  const stated = (d: Difference[]) => d.map((x) => `${x.name} ${shown(x.stored)}`).join(', ');
  if (mode === 'create') {
    lines.warn(
      `${c.handlerName}: group ${c.key} already exists with ${stated(differs)}; these options apply only when a group is created ` +
        `(set groupSettings: 'apply' on RheoModule.forRoot to bring the stored group in line at startup)`,
    );
    return config;
  }
  for (const d of differs.filter((x) => !inPlace(x))) {
    lines.warn(
      `${c.handlerName}: group ${c.key} already exists with ${stated([d])}; ${FIXED_REASON[d.name]}: ` +
        `reset or recreate the group to change it`,
    );
  }
  const applied = differs.filter(inPlace);
  if (applied.length === 0) return config;
  const changes: GroupChanges = {};
  const has = (name: string) => applied.some((d) => d.name === name);
  if (has('maxAttempts')) changes.maxAttempts = c.declared.maxAttempts;
  const retry: RetryBackoff = {};
  for (const f of RETRY_FIELDS) if (has(`retry.${f}`)) retry[f] = c.declared.retry![f];
  if (Object.keys(retry).length > 0) changes.retry = retry;
  if (has('keyConcurrency')) changes.keyConcurrency = c.declared.keyConcurrency;
  if (has('groupConcurrency')) changes.groupConcurrency = c.declared.groupConcurrency;
  if (has('rateLimit')) changes.rateLimit = c.declared.rateLimit;
  const updated = await rheo.updateGroup(c.stream, c.group, changes);
  for (const d of applied) {
    lines.log(`${c.handlerName}: group ${c.key}: ${d.name} ${shown(d.stored)} -> ${shown(d.declared)} (groupSettings: 'apply')`);
  }
  return updated;
}
