// The backends a cross-backend spec runs one case list against (describe.each):
// memory, and SQLite as the real store, each on a test clock. Every `make` gives
// a fresh store (a new SQLite file in this process's temp dir), so cases never
// share state; `removeTempFiles` deletes the files after the run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, type ManualClock, sqliteBackend } from '../../lib';
import { MemoryBackend } from '../../lib/backends/memory/memory-backend';

export interface ClockedBackend {
  name: string;
  make(clock: ManualClock): Backend;
}

let dir: string | null = null;
let files = 0;

function sqliteFile(): string {
  dir ??= mkdtempSync(join(tmpdir(), 'rheo-clocked-'));
  files += 1;
  return join(dir, `store-${files}.db`);
}

export const CLOCKED_BACKENDS: ClockedBackend[] = [
  { name: 'memory', make: (clock) => new MemoryBackend({ clock }) },
  { name: 'sqlite', make: (clock) => sqliteBackend({ database: sqliteFile(), clock }) },
];

/** Delete the SQLite files made so far (call in afterAll, after closing the backends). */
export function removeTempFiles(): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = null;
}
