import { join } from 'node:path';
import { scriptWithoutDrivers } from '../support/without-drivers';

// @nestjs/terminus is an optional peer: an app without it boots and consumes;
// only asking the health indicator for a result needs it, and says so.
describe('the Nest layer without @nestjs/terminus installed', () => {
  it('boots a Rheo app, consumes, and explains what the health indicator needs', () => {
    const out = scriptWithoutDrivers(join(__dirname, 'fixtures', 'no-terminus-app.ts'));
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({
      terminusBlocked: true,
      consumed: true,
      health: {
        code: 'invalid_argument',
        message:
          'RheoHealthIndicator (import TerminusModule too) needs the optional dependency "@nestjs/terminus": npm install @nestjs/terminus',
      },
    });
  });
});
