import { RheoError } from '../../core/errors';
import { checkPartition } from '../../core/requests';
import type { GroupConfig, Lease, RheoEvent, StreamInfo } from '../../core/types';
import { planLeases, type PlannedLease } from './settle-plan';
import type { AppendedEvents, NewEvent } from '../backend';
import { appended, repeatsOf } from '../../core/appended';
import type { TypeormDataSource } from './external';
import { copyGroupConfig, copyStreamInfo } from '../copies';
import { groupKey, Registrations } from '../../core/registrations';

/**
 * What both SQL dialects share: opening once, the stream and group registrations
 * this process remembers (`Registrations`, which the facade reads too), the
 * round-robin rotation, and batch dedupe. getStream always reads the store (a
 * stream's retention may change elsewhere) and the hot paths read only the
 * partitions from what is remembered. A group may be deleted (deleteGroup), from
 * any process: getGroup reads the store, and the hot paths' memory of a group
 * deleted elsewhere does no harm, since its rows are gone (a claim joins no
 * positions, a settle finds no delivery: stale_lease).
 */
export abstract class SqlBackendBase {
  abstract readonly name: string;
  /** The registrations this process remembers; the facade shares them (`Backend.registrations`). */
  readonly registrations = new Registrations();
  protected ready: Promise<void> | null = null;
  protected closed = false;
  private readonly rotation = new Map<string, number>();

  /** The dialect's start-up, run once by {@link init}: DataSource, install, listeners. */
  protected abstract open(): Promise<void>;

  /** Open once (idempotent); a failed attempt is forgotten, so the next call tries again. */
  init(): Promise<void> {
    if (this.closed) return Promise.reject(new RheoError('backend_unavailable', `the ${this.name} backend is closed`));
    if (!this.ready) {
      this.ready = this.open().catch((err) => {
        this.ready = null;
        // Whatever stops the store from opening (refused, no such file, bad credentials) means it is not available.
        throw err instanceof RheoError
          ? err
          : new RheoError('backend_unavailable', `${this.name} init: ${(err as Error)?.message ?? String(err)}`, { cause: err });
      });
    }
    return this.ready;
  }

  /** Initialise a DataSource we own; a borrowed one is the host's to initialise. */
  protected async initializeDataSource(ds: TypeormDataSource, owned: boolean): Promise<void> {
    if (ds.isInitialized) return;
    if (!owned)
      throw new RheoError('backend_unavailable', 'the DataSource is not initialized: initialize it before using the rheo backend');
    await ds.initialize();
  }

  protected abstract loadStream(stream: string): Promise<StreamInfo | null>;
  protected abstract loadGroup(stream: string, group: string): Promise<GroupConfig | null>;

  protected rememberStream(info: StreamInfo): StreamInfo {
    this.registrations.rememberStream(info);
    return copyStreamInfo(info);
  }

  protected rememberGroup(config: GroupConfig): GroupConfig {
    this.registrations.rememberGroup(config);
    return config;
  }

  /** Drop a deleted group from the caches (deleteGroup). */
  protected forgetGroup(stream: string, group: string): void {
    this.registrations.forgetGroup(stream, group);
    this.rotation.delete(groupKey(stream, group));
  }

  protected cachedGroup(stream: string, group: string): GroupConfig | null {
    return this.registrations.group(stream, group) ?? null;
  }

  /** The stream as stored now, retention included (read every time: see the class comment). */
  async getStream(stream: string): Promise<StreamInfo | null> {
    const info = await this.loadStream(stream);
    return info ? this.rememberStream(info) : null;
  }

  /**
   * The stream's registration for its partitions (from the cache once seen): its
   * `retention` may be stale, so nothing may read that from here.
   */
  protected async mustStream(stream: string): Promise<StreamInfo> {
    const info = this.registrations.stream(stream) ?? (await this.getStream(stream));
    if (!info) throw RheoError.streamNotFound(stream);
    return info;
  }

  /** The group's config, from cache or store; null when it does not exist. */
  protected async group(stream: string, group: string): Promise<GroupConfig | null> {
    const cached = this.cachedGroup(stream, group);
    if (cached) return cached;
    const config = await this.loadGroup(stream, group);
    return config ? this.rememberGroup(config) : null;
  }

  /**
   * Bring the configs of every group `leases` name into the cache, so a batch can
   * be planned from it: one lookup per distinct (stream, group), not per lease
   * (and none at all once cached, the usual case).
   */
  protected async loadGroupsOf(leases: Iterable<{ stream: string; group: string }>): Promise<void> {
    for (const l of leases) if (!this.cachedGroup(l.stream, l.group)) await this.group(l.stream, l.group);
  }

  /**
   * The one lease of a transactional consumer's ack, planned as an ack (planLeases:
   * its delivery and its group's config), or the error that answers it without the
   * store (a lease of no known group, a malformed position).
   */
  protected async planTransactionalAck(
    lease: Lease<unknown>,
  ): Promise<{ planned: PlannedLease & { config: GroupConfig } } | { error: RheoError }> {
    await this.loadGroupsOf([lease]);
    const { planned, answered } = planLeases(
      [lease],
      () => 'ack',
      (s, g) => this.cachedGroup(s, g),
    );
    return planned[0] ? { planned: planned[0] } : { error: answered.get(0)! };
  }

  /** Read from the store (another process may have deleted the group), refreshing the cache. */
  async getGroup(stream: string, group: string): Promise<GroupConfig | null> {
    const g = await this.loadGroup(stream, group);
    if (!g) {
      this.forgetGroup(stream, group);
      return null;
    }
    return copyGroupConfig(this.rememberGroup(g));
  }

  protected async mustGroup(stream: string, group: string): Promise<GroupConfig> {
    await this.mustStream(stream);
    const g = await this.group(stream, group);
    if (!g) throw RheoError.groupNotFound(stream, group);
    return g;
  }

  /** The partition a fetch's round-robin starts from; moves on every fetch so no partition starves. */
  protected rotate(stream: string, group: string, partitions: number): number {
    const key = groupKey(stream, group);
    const n = this.rotation.get(key) ?? 0;
    this.rotation.set(key, n + 1);
    return n % partitions;
  }

  /**
   * Validate partitions (the whole batch before anything is written) and fold
   * repeated ids: the first occurrence is stored, later ones get the same event.
   */
  protected dedupe(events: NewEvent[], partitions: number): { unique: NewEvent[]; indexOf: number[] } {
    const first = new Map<string, number>();
    const unique: NewEvent[] = [];
    const indexOf = events.map((e) => {
      checkPartition('partition', e.partition, partitions);
      let i = first.get(e.id);
      if (i === undefined) {
        i = unique.push(e) - 1;
        first.set(e.id, i);
      }
      return i;
    });
    return { unique, indexOf };
  }

  /**
   * Results per input: the first occurrence of an id gets the stored event, repeats a copy of it.
   * `stored`'s own repeats (ids stored before, as `appended` tells them) plus the batch's repeats.
   */
  protected inInputOrder(stored: RheoEvent[], indexOf: number[]): AppendedEvents {
    const used = new Set<number>();
    const out = indexOf.map((i) => {
      if (!used.has(i)) {
        used.add(i);
        return stored[i];
      }
      const e = stored[i];
      const copy: RheoEvent = {
        ...e,
        timestamp: new Date(e.timestamp.getTime()),
        metadata: structuredClone(e.metadata),
        payload: structuredClone(e.payload),
      };
      if (e.deliverAt) copy.deliverAt = new Date(e.deliverAt.getTime());
      return copy;
    });
    return appended(out, (repeatsOf(stored) ?? 0) + indexOf.length - stored.length);
  }
}
