// The W3C Trace Context header `traceparent`, written and read by hand (ADR 021):
// the event's metadata is a stored record, not a transient header, so its keys
// are fixed by nestjs-rheo (`traceparent`, `tracestate`) whatever propagator the
// app registered, and reading them needs no propagator at all.
// https://www.w3.org/TR/trace-context/#traceparent-header

/** The metadata key holding the W3C `traceparent` of the span that appended the event. */
export const TRACEPARENT = 'traceparent';
/** The metadata key holding the W3C `tracestate` that goes with {@link TRACEPARENT} (absent when empty). */
export const TRACESTATE = 'tracestate';

/** The identity a `traceparent` carries. */
export interface TraceParent {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

const HEADER = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;

/** `00-<trace id>-<span id>-<flags>`: version 00, the only one this library writes. */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * The identity in a `traceparent`, or undefined when it is not one: a metadata
 * value is whatever a producer wrote, and a malformed one must not fail a
 * delivery (the span then simply has no parent). Follows the spec's rules: lower
 * hex, version `ff` invalid, version 00 exactly four fields, a later version may
 * append fields, all-zero ids invalid.
 */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const m = HEADER.exec(value.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: parseInt(flags, 16) };
}
