// Flow control across processes on SQLite: the shared suite (test/support/flow-suite.ts).
// SQLite is single-node, not single-process: the consumer processes share the file.
// The checker's rows go to a file of their own beside it, appended by the children.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rheo, sqliteBackend } from '../../lib';
import { runFlowSuite } from '../support/flow-suite';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-flow-'));
const database = join(dir, 'rheo.db');

runFlowSuite({
  name: 'sqlite',
  processes: { kind: 'fork', backend: { name: 'sqlite', options: { database } } },
  rheo: new Rheo(sqliteBackend({ database })),
  log: (scenario) => ({ kind: 'file', path: join(dir, `flow-checker-${scenario}.jsonl`) }),
  cleanup: async () => rmSync(dir, { recursive: true, force: true }),
});
