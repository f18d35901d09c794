import { RheoError } from '../core/errors';
import { checkBoolean, checkKeys, keySet } from '../core/validate';

/** What a backend promises. Guarantees decide which conformance cases run. */
export interface Guarantees {
  durable: boolean;
  distributed: boolean;
  partitions: boolean;
  contiguousFrontier: boolean;
  replay: boolean;
  orderedPartitions: boolean;
  /**
   * `ordering: 'key'`, `keyConcurrency`, `groupConcurrency` and `rateLimit`, enforced by the
   * store across every process (docs/adr/049-flow-control.md). Without it, createGroup and
   * updateGroup refuse them.
   */
  flowControl: boolean;
  /** Invariant: always true. */
  atLeastOnce: true;
  /** Invariant: always true. */
  leaseFencing: true;
}

/** How a backend works. Mechanisms select optimisations, never correctness. */
export interface Mechanisms {
  /** `wait()` is driven by server push (LISTEN/NOTIFY). */
  notifications: boolean;
  /** `wait()` is a blocking read. */
  blockingReads: boolean;
  /** appendBatch and bulk settle are single round trips. */
  batchWrites: boolean;
  secondaryIndexes: boolean;
  /** append accepts `{ manager }` and writes inside the caller's transaction. */
  transactionalAppend: boolean;
  /** `ackInTransaction` runs the caller's work in a transaction and writes the ack in it (exactly-once effects). */
  transactionalAck: boolean;
}

/** A validated capabilities value. */
export interface Capabilities {
  guarantees: Guarantees;
  mechanisms: Mechanisms;
}

const GUARANTEES = ['durable', 'distributed', 'partitions', 'contiguousFrontier', 'replay', 'orderedPartitions', 'flowControl'] as const;
const MECHANISMS = [
  'notifications',
  'blockingReads',
  'batchWrites',
  'secondaryIndexes',
  'transactionalAppend',
  'transactionalAck',
] as const;

/** Input of {@link createCapabilities}: omitted flags are false, invariants true. */
export interface CapabilitiesInput {
  guarantees?: Partial<Record<(typeof GUARANTEES)[number] | 'atLeastOnce' | 'leaseFencing', boolean>>;
  mechanisms?: Partial<Record<(typeof MECHANISMS)[number], boolean>>;
}

function pick<K extends string>(
  section: string,
  known: readonly K[],
  given: Record<string, unknown> | undefined,
  invariants: readonly string[],
): Record<K, boolean> {
  const out = {} as Record<K, boolean>;
  for (const k of known) out[k] = false;
  if (given !== undefined) checkKeys(`capabilities.${section}`, given, keySet(`a known ${section} flag`, [...known, ...invariants]));
  for (const [k, v] of Object.entries(given ?? {})) {
    if (invariants.includes(k)) {
      if (v !== true) throw RheoError.invalid(`capabilities.${section}.${k}`, 'is an invariant and must be true');
      continue;
    }
    out[k as K] = checkBoolean(`capabilities.${section}.${k}`, v);
  }
  return out;
}

/**
 * Build a validated, frozen capabilities value. Unknown flags, non-boolean values
 * and a false invariant (`atLeastOnce`, `leaseFencing`) are rejected.
 */
export function createCapabilities(input: CapabilitiesInput): Capabilities {
  const guarantees = {
    ...pick('guarantees', GUARANTEES, input.guarantees, ['atLeastOnce', 'leaseFencing']),
    atLeastOnce: true as const,
    leaseFencing: true as const,
  };
  const mechanisms = pick('mechanisms', MECHANISMS, input.mechanisms, []);
  return Object.freeze({ guarantees: Object.freeze(guarantees), mechanisms: Object.freeze(mechanisms) });
}
