import type { CallKind } from './errors';
import type { RedisCommands } from './external';
import type { ScriptName } from './scripts';

/**
 * What the backend lends the modules that drive multi-call work (trimming.ts,
 * purging.ts): its script calls and plain ioredis calls, every error already mapped
 * to a RheoError (errors.ts).
 */
export interface RedisOps {
  /** One script call; with `on`, a missing stream or group is explained in its terms. */
  script(
    kind: CallKind,
    name: ScriptName,
    keys: string[],
    args: Array<string | number>,
    on?: { stream: string; group?: string },
  ): Promise<unknown>;
  /** Plain ioredis calls. */
  call<T>(kind: CallKind, fn: (redis: RedisCommands) => Promise<T>): Promise<T>;
}
