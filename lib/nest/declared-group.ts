// A consumer's group at startup, against the settings its options declare
// (docs/adr/047-changing-a-group-in-place.md): created with them when it does not
// exist; when it exists and differs, either left as it is with a warning
// (`groupSettings: 'create'`, the default) or brought in line by updateGroup, each
// change logged (`'apply'`). Ordering cannot change in place: it only warns.
import type { Rheo } from '../core/rheo';
import type { GroupChanges, GroupConfig, GroupOptions, RetryBackoff } from '../core/types';

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
  return out;
}

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
  const stated = (d: Difference[]) => d.map((x) => `${x.name} ${String(x.stored)}`).join(', ');
  if (mode === 'create') {
    lines.warn(
      `${c.handlerName}: group ${c.key} already exists with ${stated(differs)}; these options apply only when a group is created ` +
        `(set groupSettings: 'apply' on RheoModule.forRoot to bring the stored group in line at startup)`,
    );
    return config;
  }
  const ordering = differs.filter((d) => d.name === 'ordering');
  if (ordering.length > 0) {
    lines.warn(
      `${c.handlerName}: group ${c.key} already exists with ${stated(ordering)}; ordering cannot change in place ` +
        `(deliveries in flight would break it): reset or recreate the group to change it`,
    );
  }
  const applied = differs.filter((d) => d.name !== 'ordering');
  if (applied.length === 0) return config;
  const changes: GroupChanges = {};
  if (applied.some((d) => d.name === 'maxAttempts')) changes.maxAttempts = c.declared.maxAttempts;
  const retry: RetryBackoff = {};
  for (const f of RETRY_FIELDS) if (applied.some((d) => d.name === `retry.${f}`)) retry[f] = c.declared.retry![f];
  if (Object.keys(retry).length > 0) changes.retry = retry;
  const updated = await rheo.updateGroup(c.stream, c.group, changes);
  for (const d of applied) {
    lines.log(`${c.handlerName}: group ${c.key}: ${d.name} ${String(d.stored)} -> ${String(d.declared)} (groupSettings: 'apply')`);
  }
  return updated;
}
