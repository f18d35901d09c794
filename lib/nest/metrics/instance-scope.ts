// The diagnostics channels are process-wide: every Rheo in the process publishes
// on the same `rheo:*` names. An instance's metrics count only what is its own
// (docs/adr/022): deliveries by the consumer id of one of its running consumers
// (unique per Consumer, so exact), appends by the id of the instance's Rheo, which
// every operation message carries.
import type { RheoInstance } from '../rheo-instance';
import type { RheoServer } from '../rheo-server';

export class InstanceScope {
  private readonly consumerIds = new Set<string>();
  /** Some consumer started since the last look (the channel does not say whose). */
  private stale = true;

  constructor(
    private readonly instance: RheoInstance,
    private readonly server: RheoServer,
  ) {}

  get name(): string {
    return this.instance.name;
  }

  /** A consumer started somewhere in the process: the next unknown consumer id is worth a look at this server's. */
  consumersChanged(): void {
    this.stale = true;
  }

  ownsConsumer(consumerId: string): boolean {
    if (this.consumerIds.has(consumerId)) return true;
    if (!this.stale) return false;
    this.lookAtConsumers();
    return this.consumerIds.has(consumerId);
  }

  /** An operation message's `rheo`: the id of the Rheo that ran it. */
  ownsRheo(id: string): boolean {
    return id === this.instance.rheo.id;
  }

  private lookAtConsumers(): void {
    this.stale = false;
    for (const group of this.server.unwrap().groups.values()) this.consumerIds.add(group.config.consumerId);
  }
}
