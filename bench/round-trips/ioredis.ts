// Counts the round trips to Redis made in this process through ioredis: a
// command sent alone is one; a pipeline (or MULTI/EXEC) is one however many
// commands it carries (ioredis writes them in one go and the replies come back
// together). Both go through `Redis.prototype.sendCommand`; a pipeline's commands
// share the `stream` argument it passes, so each pipeline is counted once, at
// its first command. Patches this process's ioredis only; standalone `Redis`
// (a Cluster's nodes are `Redis` instances too).
import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { SCRIPTS } from '../../lib/backends/redis/scripts';
import { Counter } from './counter';

let installed: Counter | null = null;

interface Command {
  name: string;
  args: unknown[];
}

const SCRIPT_NAMES = new Map<string, string>(
  Object.entries(SCRIPTS as Record<string, string>).flatMap(([name, lua]) => [
    [createHash('sha1').update(lua).digest('hex'), name],
    [lua, name],
  ]),
);

/** A command's label: its name, and for EVALSHA/EVAL which of the backend's scripts. */
function label(command: Command): string {
  const name = command.name.toUpperCase();
  if (name === 'EVALSHA' || name === 'EVAL') return `${name} ${SCRIPT_NAMES.get(String(command.args[0])) ?? '?'}`;
  return name;
}

/** `a, a, b` → `2× a, b`. */
function fold(names: string[]): string {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return [...counts].map(([n, c]) => (c === 1 ? n : `${c}× ${n}`)).join(', ');
}

/** Patch `Redis.prototype.sendCommand` once; every later round trip is recorded on the returned counter. */
export function countRedisRoundTrips(): Counter {
  if (installed) return installed;
  const counter = new Counter();
  const pipelines = new WeakMap<object, string[]>();
  const proto = Redis.prototype as unknown as { sendCommand: (command: Command, stream?: object, ...rest: unknown[]) => unknown };
  const original = proto.sendCommand;
  proto.sendCommand = function (this: unknown, command: Command, stream?: object, ...rest: unknown[]) {
    if (stream && (stream as { isPipeline?: boolean }).isPipeline) {
      let names = pipelines.get(stream);
      if (!names) {
        const all: string[] = (names = []);
        pipelines.set(stream, all);
        // Labelled when the summary is taken: by then every command of the pipeline has been added.
        counter.add(() => `pipeline [${fold(all)}]`);
      }
      names.push(label(command));
    } else {
      counter.add(label(command));
    }
    return original.call(this, command, stream, ...rest);
  };
  installed = counter;
  return counter;
}
