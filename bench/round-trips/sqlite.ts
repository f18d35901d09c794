// Counts the statements better-sqlite3 runs in this process: every call of a
// statement's run/get/all/iterate (BEGIN and COMMIT of `db.transaction()` are
// statements too) and every `db.exec`. SQLite is in-process, so these are not
// network round trips; each is a call into SQLite with its own VM start, and the
// backend's SQLite statements are the analogue of the other stores' round trips.
// Patches the prototypes of this process's better-sqlite3 only.
import { Counter, sqlLabel } from './counter';

let installed: Counter | null = null;

type Fn = (...args: unknown[]) => unknown;

/** Patch the Statement and Database prototypes once; every later statement is recorded on the returned counter. */
export function countSqliteStatements(): Counter {
  if (installed) return installed;
  const counter = new Counter();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Database = require('better-sqlite3') as { new (file: string): { prepare(sql: string): object; close(): void }; prototype: object };
  const probe = new Database(':memory:');
  const statementProto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, Fn>;
  probe.close();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = statementProto[method];
    statementProto[method] = function (this: { source: string }, ...args: unknown[]) {
      counter.add(sqlLabel(this.source));
      return original.apply(this, args);
    };
  }
  const dbProto = Database.prototype as Record<string, Fn>;
  const exec = dbProto.exec;
  dbProto.exec = function (this: unknown, sql: unknown) {
    counter.add(`exec ${sqlLabel(String(sql))}`);
    return exec.call(this, sql);
  };
  installed = counter;
  return counter;
}
