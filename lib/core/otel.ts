// OpenTelemetry on the producer side (docs/observability.md): placeholder until
// the `send <stream>` span lands; the facade already calls it on every append.
import type { NewEvent } from '../backends/backend';

/** Runs `append` inside a `send <stream>` span (kind PRODUCER) and stamps each event's metadata with its trace context. */
export function sendSpan<T>(stream: string, events: NewEvent[], append: () => Promise<T>): Promise<T> {
  void stream;
  void events;
  return append();
}
