// Counts the round trips to PostgreSQL made in this process: every
// `pg.Client.prototype.query` call is one (Pool.query checks a client out and
// calls it; TypeORM's query runners call their PoolClient's), named prepared
// statements included (parse, bind and execute go out together). Patches the
// prototype of this process's `pg` only; never loaded by the library.
import { Client } from 'pg';
import { Counter, sqlLabel } from './counter';

let installed: Counter | null = null;

/** Patch `pg.Client.prototype.query` once; every later call is recorded on the returned counter. */
export function countPgRoundTrips(): Counter {
  if (installed) return installed;
  const counter = new Counter();
  const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0] as string | { text?: string; name?: string } | undefined;
    const text = typeof first === 'string' ? first : (first?.text ?? first?.name ?? '?');
    counter.add(sqlLabel(text));
    return original.apply(this, args);
  };
  installed = counter;
  return counter;
}
