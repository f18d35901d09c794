import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteBackend } from '../../lib';
import { runConformance } from '../conformance/suite';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-conf-'));

runConformance({
  name: 'sqlite',
  create: async (clock) => sqliteBackend({ database: join(dir, 'rheo.db'), clock }),
  cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  // A file in a directory that does not exist cannot be opened.
  unreachable: () => sqliteBackend({ database: join(dir, 'missing', 'dir', 'rheo.db') }),
});
