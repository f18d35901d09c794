import type { GroupConfig, StreamInfo } from './types';

/**
 * What one process remembers of the store's stream and group registrations, in
 * one place (docs/adr/044-registrations-in-one-layer.md): the backend's when it
 * has one (`Backend.registrations`), else the facade's own. A stream's partitions
 * and creation time never change and streams are never deleted, so a remembered
 * stream is never wrong about them; its `retention` may be stale (another process
 * may change it), so nothing may read that from here. A group's config may be
 * deleted, or changed, by any process: whoever reads the store for it remembers
 * what it read, and whoever deletes a group forgets it. Misses are not
 * remembered.
 */
export class Registrations {
  private readonly streams = new Map<string, StreamInfo>();
  private readonly groups = new Map<string, GroupConfig>();
  /**
   * The group {@link group} found last. A settle looks its group up once per op,
   * and the ops of a batch nearly always name one group: comparing two strings is
   * cheaper than building the map's key for each. Cleared whenever the map changes.
   */
  private lastGroup: GroupConfig | null = null;

  /** The stream's registration, if seen; only its partitions and creation time may be relied on. */
  stream(name: string): StreamInfo | undefined {
    return this.streams.get(name);
  }

  rememberStream(info: StreamInfo): void {
    this.streams.set(info.name, info);
  }

  /** The group's config as last read or written by this process, if any. */
  group(stream: string, group: string): GroupConfig | undefined {
    const last = this.lastGroup;
    if (last !== null && last.group === group && last.stream === stream) return last;
    const found = this.groups.get(groupKey(stream, group));
    if (found !== undefined) this.lastGroup = found;
    return found;
  }

  rememberGroup(config: GroupConfig): void {
    this.groups.set(groupKey(config.stream, config.group), config);
    this.lastGroup = null;
  }

  /** Drop a group deleted (or found gone) from what is remembered. */
  forgetGroup(stream: string, group: string): void {
    this.groups.delete(groupKey(stream, group));
    this.lastGroup = null;
  }
}

/** The one map key of a (stream, group): NUL cannot occur in a name (ADR 035). */
export function groupKey(stream: string, group: string): string {
  return `${stream}\0${group}`;
}
