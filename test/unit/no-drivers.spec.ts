import { evalWithoutDrivers as run } from '../support/without-drivers';

// Drivers, Terminus and the telemetry peers (@opentelemetry/api, prom-client) are
// optional: a user who picks one backend installs no other driver, one who wants
// no traces or metrics installs neither, and the package must still load and run.
describe('importing the package with no optional peer installed', () => {
  it.each(['ioredis', '@opentelemetry/api', 'prom-client'])('proves the blocker works: %s cannot be required', (peer) => {
    expect(() => run(`require(${JSON.stringify(peer)})`)).toThrow(/blocked by test/);
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

  it('appends (one and a batch) and consumes through a runtime Consumer, the span hooks passing through', () => {
    const out = run(`
      const { Consumer, Rheo, memoryBackend } = require('./lib');
      (async () => {
        const rheo = new Rheo(memoryBackend());
        await rheo.createStream('s');
        await rheo.createGroup('s', 'g');
        const one = await rheo.append('s', { payload: 1, metadata: { source: 'x' } });
        const batch = await rheo.appendBatch('s', [{ payload: 2 }, { payload: 3 }]);
        const handled = [];
        const group = new Consumer(rheo, { stream: 's', group: 'g', pollMs: 10 }, async (lease) => {
          handled.push(lease.event.payload);
        });
        const settled = new Promise((resolve) => {
          let n = 0;
          group.on('settled', () => ++n === 3 && resolve());
        });
        group.start();
        await settled;
        await group.drain(1000);
        const lag = await rheo.lag('s', 'g');
        process.stdout.write(JSON.stringify({ handled, lag: lag.lag, metadata: [one, ...batch].map((e) => e.metadata) }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `);
    expect(JSON.parse(out)).toEqual({ handled: [1, 2, 3], lag: 0, metadata: [{ source: 'x' }, {}, {}] });
  });
});
