import type { INestApplicationContext } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { ManualClock, memoryBackend, Rheo, RheoHealthIndicator, RheoModule } from '../../lib';

// RheoHealthIndicator and a paused group: the pause is in the group's figures, and
// the lag and the oldest unsettled event a pause lets grow fail the check only with
// checkLagWhilePaused; dead letters are checked either way.

describe('RheoHealthIndicator on a paused group', () => {
  const clock = new ManualClock();
  let app: INestApplicationContext;
  let rheo: Rheo;
  let indicator: RheoHealthIndicator;
  const groups = ['orders/billing'];

  beforeAll(async () => {
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: memoryBackend({ clock }), streams: [{ name: 'orders' }] }), TerminusModule],
    }).compile();
    app = await ref.createNestApplication({ logger: false }).init();
    rheo = app.get(Rheo);
    indicator = app.get(RheoHealthIndicator);
    await rheo.createGroup('orders', 'billing');
    await rheo.appendBatch('orders', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    clock.advance(60_000);
  });

  afterAll(() => app.close());

  it('goes down for lag and age before the pause; while paused it is up and reports the pause', async () => {
    const thresholds = { maxLag: 1, maxOldestUnackedMs: 1000, groups };
    const before = await indicator.isHealthy('rheo', thresholds);
    expect(before.rheo).toMatchObject({
      status: 'down',
      failing: ['orders/billing: lag 3 > 1', 'orders/billing: oldest unsettled event 60000 ms old > 1000 ms'],
    });
    expect(before.rheo.groups).toEqual({ 'orders/billing': expect.not.objectContaining({ paused: expect.anything() }) });

    const until = new Date(clock.now() + 3_600_000);
    const pause = await rheo.pauseGroup('orders', 'billing', { until, reason: 'card API down', by: 'ana' });
    const paused = await indicator.isHealthy('rheo', thresholds);
    expect(paused.rheo).toEqual({
      status: 'up',
      groups: {
        'orders/billing': {
          lag: 3,
          inflight: 0,
          deadLetters: 0,
          oldestUnsettledAgeMs: 60_000,
          paused: { since: pause.pausedAt.toISOString(), until: until.toISOString(), reason: 'card API down', by: 'ana' },
        },
      },
    });
  });

  it('checkLagWhilePaused: the same thresholds fail a paused group, saying it is paused', async () => {
    const result = await indicator.isHealthy('rheo', { maxLag: 1, maxOldestUnackedMs: 1000, groups, checkLagWhilePaused: true });
    expect(result.rheo).toMatchObject({
      status: 'down',
      failing: ['orders/billing: lag 3 > 1 (paused)', 'orders/billing: oldest unsettled event 60000 ms old > 1000 ms (paused)'],
    });
    expect(await indicator.isHealthy('rheo', { maxLag: 1, groups, checkLagWhilePaused: false })).toMatchObject({ rheo: { status: 'up' } });
    await expect(indicator.isHealthy('rheo', { maxLag: 1, checkLagWhilePaused: 'yes' } as never)).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'checkLagWhilePaused',
    });
  });

  it('still fails on dead letters while paused; after the resume the lag counts again', async () => {
    await rheo.resumeGroup('orders', 'billing');
    const [lease] = await rheo.fetch('orders', 'billing', { limit: 1 });
    await rheo.reject(lease, { reason: 'bad order' });
    await rheo.pauseGroup('orders', 'billing', { reason: 'card API down' });
    const dead = await indicator.isHealthy('rheo', { maxLag: 1, maxDeadLetters: 0, groups });
    expect(dead.rheo).toMatchObject({ status: 'down', failing: ['orders/billing: dead letters 1 > 0'] });
    expect(dead.rheo.groups).toMatchObject({ 'orders/billing': { paused: { until: null, reason: 'card API down', by: null } } });

    await rheo.resumeGroup('orders', 'billing');
    const resumed = await indicator.isHealthy('rheo', { maxLag: 1, groups });
    expect(resumed.rheo).toMatchObject({ status: 'down', failing: ['orders/billing: lag 2 > 1'] });
    expect(resumed.rheo.groups).toEqual({ 'orders/billing': expect.not.objectContaining({ paused: expect.anything() }) });
  });
});
