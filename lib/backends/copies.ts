import type { EventMetadata, GroupConfig, JsonValue, StreamInfo } from '../core/types';
import type { CreateGroupRequest } from './backend';

// Backends cache stream and group registrations; what they hand out is a copy, so
// a caller mutating a returned object (or its Date) never changes the cache.

/** A copy of a group's configuration that shares nothing mutable with it. */
export function copyGroupConfig(config: GroupConfig): GroupConfig {
  return {
    ...config,
    retry: { ...config.retry },
    rateLimit: config.rateLimit && { ...config.rateLimit },
    createdAt: new Date(config.createdAt.getTime()),
  };
}

/** A new group's configuration from its request, created at `createdAt` (ms, the store's clock): shares nothing with the request. */
export function newGroupConfig(req: CreateGroupRequest, createdAt: number): GroupConfig {
  const { stream, group, maxAttempts, ordering, keyConcurrency, groupConcurrency } = req;
  return {
    stream,
    group,
    maxAttempts,
    retry: { ...req.retry },
    ordering,
    keyConcurrency,
    groupConcurrency,
    rateLimit: req.rateLimit && { ...req.rateLimit },
    createdAt: new Date(createdAt),
  };
}

/** A copy of a stream's registration that shares nothing mutable with it. */
export function copyStreamInfo(info: StreamInfo): StreamInfo {
  const copy: StreamInfo = { ...info, createdAt: new Date(info.createdAt.getTime()) };
  if (info.retention) copy.retention = { ...info.retention };
  return copy;
}

/**
 * A copy of a JSON value core validated (plain objects, arrays, finite numbers,
 * strings, booleans, null: checkJsonValue): exactly what
 * `JSON.parse(JSON.stringify(value))` returns, that is what reading the stored
 * event back returns (-0 becomes 0, a `__proto__` key stays an own property,
 * objects get the ordinary prototype), at a fraction of the cost of the round
 * trip or of structuredClone (0.15 against 0.53 µs for a ~100-byte payload).
 * Backends return appended events built from such copies: they share nothing
 * with the caller's input. Take them before the append's first await, so that
 * they are what the facade serialised, whatever the caller changes meanwhile.
 */
export function copyJson(value: EventMetadata): EventMetadata;
export function copyJson<T extends JsonValue>(value: T): T;
export function copyJson(value: JsonValue | EventMetadata): JsonValue | EventMetadata {
  return copyValue(value as JsonValue);
}

function copyValue(value: JsonValue): JsonValue {
  if (typeof value !== 'object' || value === null) return value === 0 ? 0 : value;
  if (Array.isArray(value)) {
    const a = new Array<JsonValue>(value.length);
    for (let i = 0; i < value.length; i++) a[i] = copyValue(value[i]);
    return a;
  }
  const o: Record<string, JsonValue> = {};
  for (const k of Object.keys(value)) {
    if (k === '__proto__')
      Object.defineProperty(o, k, { value: copyValue(value[k]), enumerable: true, writable: true, configurable: true });
    else o[k] = copyValue(value[k]);
  }
  return o;
}
