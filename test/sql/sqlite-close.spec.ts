// close() must keep the process alive until it resolves. The checkpoint worker is
// unref'd (it never keeps a process alive by itself), so a close that waited for
// it with nothing else pending let Node exit mid-close: code after
// `await rheo.close()` never ran and the process ended with status 0.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

describe('SQLite close in a process with nothing else to do', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'rheo-close-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('resolves, and the code after it runs', () => {
    const file = join(dir, 'rheo.db');
    const out = execFileSync(
      process.execPath,
      [
        '-r',
        'ts-node/register/transpile-only',
        '-e',
        `
        const { Rheo, sqliteBackend } = require('./lib');
        (async () => {
          const rheo = new Rheo(sqliteBackend({ database: ${JSON.stringify(file)} }));
          await rheo.createStream('s');
          await rheo.append('s', { payload: 1 });
          await rheo.close();
          process.stdout.write('closed');
        })().catch((e) => { console.error(e); process.exit(1); });
      `,
      ],
      { cwd: root, encoding: 'utf8', env: { ...process.env, TS_NODE_PROJECT: join(root, 'tsconfig.json') } },
    );
    expect(out).toBe('closed');
  });
});
