import type { GroupConfig, StreamInfo } from '../core/types';

// Backends cache stream and group registrations; what they hand out is a copy, so
// a caller mutating a returned object (or its Date) never changes the cache.

/** A copy of a group's configuration that shares nothing mutable with it. */
export function copyGroupConfig(config: GroupConfig): GroupConfig {
  return { ...config, retry: { ...config.retry }, createdAt: new Date(config.createdAt.getTime()) };
}

/** A copy of a stream's registration that shares nothing mutable with it. */
export function copyStreamInfo(info: StreamInfo): StreamInfo {
  const copy: StreamInfo = { ...info, createdAt: new Date(info.createdAt.getTime()) };
  if (info.retention) copy.retention = { ...info.retention };
  return copy;
}
