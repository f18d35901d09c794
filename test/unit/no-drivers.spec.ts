import { evalWithoutDrivers as run } from '../support/without-drivers';

// Drivers and Terminus are optional peers: a user who picks one backend installs
// no other driver, and importing the package must still work.
describe('importing the package with no driver installed', () => {
  it('proves the blocker works: a driver cannot be required', () => {
    expect(() => run("require('ioredis')")).toThrow(/blocked by test/);
  });

  it('loads lib/index.ts and runs the memory backend end to end', () => {
    const out = run(`
      const { Rheo, memoryBackend } = require('./lib');
      (async () => {
        const rheo = new Rheo(memoryBackend());
        await rheo.createStream('s');
        await rheo.createGroup('s', 'g');
        await rheo.append('s', { payload: { ok: true } });
        const [lease] = await rheo.fetch('s', 'g');
        await rheo.ack(lease);
        process.stdout.write(JSON.stringify(await rheo.lag('s', 'g')));
      })().catch((e) => { console.error(e); process.exit(1); });
    `);
    expect(JSON.parse(out).lag).toBe(0);
  });
});
