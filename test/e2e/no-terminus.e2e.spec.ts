import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

// @nestjs/terminus is an optional peer: an app without it boots and consumes;
// only asking the health indicator for a result needs it, and says so.
describe('the Nest layer without @nestjs/terminus installed', () => {
  const root = join(__dirname, '..', '..');

  it('boots a Rheo app, consumes, and explains what the health indicator needs', () => {
    const out = execFileSync(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', '-r', './test/support/block-drivers.js', join(__dirname, 'fixtures', 'no-terminus-app.ts')],
      { cwd: root, encoding: 'utf8', env: { ...process.env, TS_NODE_PROJECT: join(root, 'tsconfig.json') } },
    );
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({
      terminusBlocked: true,
      consumed: true,
      health: { code: 'failed', message: 'RheoHealthIndicator needs @nestjs/terminus: npm install @nestjs/terminus and import TerminusModule' },
    });
  });
});
