// OpenTelemetry on the consumer side (docs/observability.md): placeholder until
// the `process <stream>` span lands; the Group already runs every handler through it.
import type { Outcome } from '../core/outcomes';
import type { Lease } from '../core/types';

/** Runs one handler inside a `process <stream>` span (kind CONSUMER) whose parent is the context the event carries. */
export function processSpan(lease: Lease, group: string, run: () => Promise<Outcome | void>): Promise<Outcome | void> {
  void lease;
  void group;
  return run();
}
