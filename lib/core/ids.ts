import { randomUUID } from 'node:crypto';

/**
 * A new random identifier (RFC 4122 v4, 122 random bits) for events, leases and
 * consumers. `randomUUID` draws from a cached entropy pool, so it stays cheap on
 * the append hot path.
 */
export function newId(): string {
  return randomUUID();
}
