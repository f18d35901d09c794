/**
 * Every limit and default of nestjs-rheo, once. Limits keep one call's work,
 * memory and timers bounded; defaults are what an option means when omitted.
 */

/** Longest stream, group, consumer id, key, type or event id accepted. */
export const MAX_NAME_LENGTH = 200;
/** Default bound on a payload's JSON size (UTF-8 bytes). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
/** Default bound on an event's metadata, as JSON (UTF-8 bytes). */
export const DEFAULT_MAX_METADATA_BYTES = 64 * 1024;
/** Default bound on one appendBatch call: its payloads' and metadata's JSON together (UTF-8 bytes). */
export const DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024;
/**
 * Most top-level keys of a query's metadata and payload filters together. Each is
 * a predicate of the store's query: SQLite refuses the statement from about 500
 * (its expression tree is at most 1000 deep), PostgreSQL's planning time grows
 * faster than the key count (docs/adr/036-input-limits.md).
 */
export const MAX_FILTER_KEYS = 64;
/** Deepest nesting of a filter value: `{ a: 1 }` is 0 levels, `{ a: { b: 1 } }` is 1. */
export const MAX_FILTER_DEPTH = 8;
/** Largest metadata and payload filters of one query together, as JSON (UTF-8 bytes). */
export const MAX_FILTER_BYTES = 16 * 1024;
/** Most partitions a stream may have. */
export const MAX_PARTITIONS = 1024;
/** Most items in one appendBatch, settleMany, renewMany or releaseMany call. */
export const MAX_BATCH = 10_000;
/** Most leases one fetch returns. */
export const MAX_FETCH_LIMIT = 1000;
/** Most items in one page of read, query or dead letters. */
export const MAX_PAGE_LIMIT = 1000;
/** Page size of read, query and dead letters when not given. */
export const DEFAULT_PAGE_LIMIT = 100;
/** Longest delay (a nack's delay, a group's backoff, an appended event's `delayMs` or `deliverAt` ahead of now): a year. */
export const MAX_DELAY_MS = 365 * 24 * 3600 * 1000;
/** Longest lease, drain or other wait: a day. */
export const MAX_DURATION_MS = 24 * 3600 * 1000;
/** Stored reasons are diagnostics, cut to this many UTF-16 units. */
export const MAX_REASON_LENGTH = 1000;
/** Highest `maxAttempts` a group may have. */
export const MAX_ATTEMPTS_LIMIT = 1000;

/** Lease time-to-live when not given, ms. */
export const DEFAULT_LEASE_MS = 30_000;
/** Leases one fetch returns when not given. */
export const DEFAULT_FETCH_LIMIT = 10;
/** Deliveries of an event before a nack dead-letters it, when not given. */
export const DEFAULT_MAX_ATTEMPTS = 5;
/** How long a drain waits for running handlers when not given, ms. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;
/** Time between two rounds of the transport's background trim when not given, ms. */
export const DEFAULT_TRIM_INTERVAL_MS = 60_000;
