import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteBackend } from '../../lib';
import { runConformance } from '../../lib/backend';

const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-conf-'));
// A regular file used as a directory: the database below it can never be created or opened.
const notADirectory = join(dir, 'not-a-directory');
writeFileSync(notADirectory, '');

runConformance({
  name: 'sqlite',
  create: async (clock) => sqliteBackend({ database: join(dir, 'rheo.db'), clock }),
  cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  unreachable: () => sqliteBackend({ database: join(notADirectory, 'rheo.db') }),
});
