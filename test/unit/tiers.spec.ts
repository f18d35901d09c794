// test/tiers.js and test/sequencer.js: every spec has a tier, a stale pattern is
// named, and the slow specs start first.
import { problems, SERIAL, SLOW, allSpecs, specsOf } from '../tiers';
import SlowFirst from '../sequencer';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

describe('test tiers', () => {
  it('places every spec of the tree in a tier, and every pattern matches a spec', () => {
    expect(problems()).toEqual([]);
  });

  it('names a spec in no tier and a pattern that matches nothing', () => {
    const files = allSpecs().filter((f) => f !== SLOW[0]);
    files.push('test/nowhere/stray.spec.ts');
    expect(problems(files)).toEqual([
      'test/nowhere/stray.spec.ts is in no tier (add it to test/tiers.js)',
      `test/tiers.js: "${SLOW[0]}" matches no spec`,
    ]);
  });

  it('splits the suite into a parallel and a serial half with nothing in both', () => {
    const parallel = specsOf('parallel');
    const serial = specsOf('serial');
    expect(serial.length).toBeGreaterThan(0);
    expect(parallel.filter((f) => serial.includes(f))).toEqual([]);
    expect([...parallel, ...serial].sort()).toEqual(allSpecs());
    expect(SERIAL.length).toBeLessThan(parallel.length);
  });

  it('starts the slow specs first, in their listed order, then the rest', async () => {
    const others = ['test/unit/a.spec.ts', 'test/unit/b.spec.ts', 'test/unit/c.spec.ts'];
    const paths = [others[0], SLOW[2], others[1], SLOW[0], others[2]];
    const tests = paths.map((p) => ({
      path: join(ROOT, p),
      duration: undefined,
      context: { config: { cache: false, cacheDirectory: '/tmp', id: 'x' }, hasteFS: { getSize: () => 0 } },
    }));
    const sequencer = new SlowFirst({ contexts: [], globalConfig: {} } as never);
    const sorted = (await sequencer.sort(tests as never)).map((t: { path: string }) => t.path.slice(ROOT.length + 1));
    expect(sorted.slice(0, 2)).toEqual([SLOW[0], SLOW[2]]);
    expect(sorted.slice(2).sort()).toEqual(others);
  });
});
