import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteBackend } from '../../lib';
import { flowProperty } from '../support/flow-property';

// Flow limits under random fetches, settles, clock moves, skips, redrives and replays on
// SQLite (test/support/flow-property.ts): the same property the memory backend holds to,
// each run on a fresh stream of one file, through a backend of its own (its own connection).
const dir = mkdtempSync(join(tmpdir(), 'rheo-sqlite-flow-property-'));
const database = join(dir, 'rheo.db');
let n = 0;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('property: flow limits (sqlite)', () => {
  flowProperty(
    (clock) => sqliteBackend({ database, clock }),
    () => `s${++n}`,
    200,
  );
});
