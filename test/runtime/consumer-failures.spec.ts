import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { type RheoError, type RheoErrorCode } from '../../lib';
import type { ConsumerState } from '../../lib/runtime/consumer-types';
import { drainAll, events, gate, setup, startConsumer } from './helpers';
import { until } from '../support/until';

afterEach(drainAll);

describe('Consumer: failed acks', () => {
  it.each<[RheoErrorCode, boolean]>([
    ['backend_unavailable', false],
    ['ambiguous', false],
  ])('%s ack (not applied): not nacked, left to expire, redelivered with attempt 2', async (code, applied) => {
    const { rheo, stream, group, backend, clock } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    backend.failSettle({ kind: 'ack', code, applied });
    const attempts: number[] = [];
    const errors: RheoError[] = [];
    const g = startConsumer(rheo, { stream, group, leaseMs: 1000, pollMs: 5 }, async (l) => void attempts.push(l.attempt));
    g.on('settle_error', ({ error, outcome }) => {
      expect(outcome.kind).toBe('ack');
      errors.push(error);
    });
    await until('the failed ack was given up', () => errors.length === 1 && g.inflight === 0);
    expect(errors[0].code).toBe(code);
    const polls = g.stats.pollTimeouts;
    await until('a few idle polls', () => g.stats.pollTimeouts >= polls + 3);
    expect(attempts).toEqual([1]); // the lease is still live: nobody may have it yet
    expect(backend.settles.map((s) => s.kind)).toEqual(['ack']);
    clock.advance(1000);
    await until('redelivered after expiry', () => attempts.length === 2);
    await until('acked', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(attempts).toEqual([1, 2]);
    expect(backend.settles.map((s) => `${s.kind}:${s.attempt}:${s.answered}`)).toEqual([`ack:1:${code}`, 'ack:2:ok']);
    expect(backend.settles.every((s) => s.eventId === e.id)).toBe(true);
  });

  it.each<RheoErrorCode>(['backend_unavailable', 'ambiguous'])(
    '%s ack that did happen underneath: not nacked, never redelivered',
    async (code) => {
      const { rheo, stream, group, backend, clock } = await setup();
      await rheo.appendBatch(stream, events(1));
      backend.failSettle({ kind: 'ack', code, applied: true });
      const attempts: number[] = [];
      const g = startConsumer(rheo, { stream, group, leaseMs: 1000, pollMs: 5 }, async (l) => void attempts.push(l.attempt));
      await until('the failed ack was given up', () => backend.settles.length === 1 && g.inflight === 0);
      expect((await rheo.lag(stream, group)).lag).toBe(0);
      clock.advance(5000);
      const polls = g.stats.pollTimeouts;
      await until('a few idle polls', () => g.stats.pollTimeouts >= polls + 3);
      expect(attempts).toEqual([1]);
      expect(backend.settles.map((s) => s.kind)).toEqual(['ack']);
    },
  );

  it('a definitely failed ack is nacked at once ("settle failed: ...") and redelivered without waiting for expiry', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(1));
    backend.failSettle({ kind: 'ack', code: 'failed', applied: false });
    const attempts: number[] = [];
    startConsumer(rheo, { stream, group, leaseMs: 60_000, pollMs: 5 }, async (l) => void attempts.push(l.attempt));
    await until('acked on the redelivery', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(attempts).toEqual([1, 2]);
    const log = backend.settles.map((s) => ({ kind: s.kind, attempt: s.attempt, answered: s.answered, delayMs: s.delayMs }));
    expect(log).toEqual([
      { kind: 'ack', attempt: 1, answered: 'failed', delayMs: undefined },
      { kind: 'nack', attempt: 1, answered: 'ok', delayMs: 0 },
      { kind: 'ack', attempt: 2, answered: 'ok', delayMs: undefined },
    ]);
    expect(backend.settles[1].reason).toMatch(/^settle failed: failed: injected fault/);
  });

  it('a stale ack (lease lost) is dropped without a nack', async () => {
    const { rheo, stream, group, backend, clock } = await setup();
    await rheo.appendBatch(stream, events(1));
    backend.failSettle({ kind: 'ack', code: 'stale_lease', applied: false });
    const attempts: number[] = [];
    const g = startConsumer(rheo, { stream, group, leaseMs: 1000, pollMs: 5 }, async (l) => void attempts.push(l.attempt));
    await until('dropped', () => backend.settles.length === 1 && g.inflight === 0);
    clock.advance(1000);
    await until('redelivered after expiry and acked', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(backend.settles.map((s) => s.kind)).toEqual(['ack', 'ack']);
    expect(attempts).toEqual([1, 2]);
  });

  it('a definitely failed nack is followed by a nack carrying its error, once; one that fails too is left to expire', async () => {
    const { rheo, stream, group, backend, clock } = await setup({ group: { retry: { initialMs: 0 } } });
    await rheo.appendBatch(stream, events(1));
    backend.failSettle({ kind: 'nack', code: 'failed', applied: false, times: 2 });
    const attempts: number[] = [];
    const g = startConsumer(rheo, { stream, group, leaseMs: 1000, pollMs: 5 }, async (l) => {
      attempts.push(l.attempt);
      if (l.attempt === 1) throw new Error('first try fails');
    });
    await until('given up', () => backend.settles.length === 2 && g.inflight === 0);
    expect(backend.settles.map((s) => `${s.kind}:${s.answered}`)).toEqual(['nack:failed', 'nack:failed']);
    expect(backend.settles[0].reason).toBe('first try fails');
    expect(backend.settles[1].reason).toMatch(/^settle failed: failed: injected fault: nack answered failed/);
    clock.advance(1000);
    await until('redelivered after expiry and acked', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(attempts).toEqual([1, 2]);
  });
});

describe('Consumer: fetch errors', () => {
  it('backs off on fetch errors, reports them, recovers, and consumes everything', async () => {
    const { rheo, stream, group, backend } = await setup();
    const appended = await rheo.appendBatch(stream, events(20));
    backend.failFetch(3, 'backend_unavailable');
    const seen = new Set<string>();
    const states: ConsumerState[] = [];
    const errorsWhileBackingOff: Array<string | undefined> = [];
    let recovered = 0;
    const g = startConsumer(rheo, { stream, group, maxDemand: 5, concurrency: 2, pollMs: 10 }, async (l) => void seen.add(l.event.id));
    g.on('state', (s) => states.push(s));
    g.on('fetch_error', (err) => {
      expect(err.code).toBe('backend_unavailable');
      expect(g.state).toBe('backing_off');
      errorsWhileBackingOff.push(g.lastError?.code);
    });
    g.on('recovered', () => recovered++);
    await until('all consumed', () => seen.size === appended.length);
    await until('lag 0', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(errorsWhileBackingOff).toEqual(['backend_unavailable', 'backend_unavailable', 'backend_unavailable']);
    expect(states).toEqual(['backing_off', 'running']);
    expect(recovered).toBe(1);
    expect(g.lastError).toBeNull();
    expect(g.state).toBe('running');
  });

  it('while backing off, held leases are still renewed and settled', async () => {
    const { rheo, stream, group, backend } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    const hold = gate();
    const g = startConsumer(rheo, { stream, group, maxDemand: 2, concurrency: 2, leaseMs: 60, pollMs: 5 }, () => hold.promise);
    await until('one running', () => g.running === 1);
    backend.failFetch(1_000_000, 'backend_unavailable');
    await until('backing off', () => g.state === 'backing_off');
    const rounds = backend.renewRounds.length;
    await until('renewals go on', () => backend.renewRounds.length >= rounds + 2);
    expect(backend.renewRounds.slice(rounds).every((r) => r.length === 1 && r[0].event.id === e.id)).toBe(true);
    hold.open();
    await until('acked while backing off', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(g.state).toBe('backing_off');
    expect(backend.settles.map((s) => `${s.kind}:${s.answered}`)).toEqual(['ack:ok']);
  });

  it('a missing group is a fetch error the Consumer backs off on (and picks up once it exists)', async () => {
    const { rheo, stream } = await setup();
    await rheo.appendBatch(stream, events(2));
    let handled = 0;
    const g = startConsumer(rheo, { stream, group: 'later', pollMs: 10 }, async () => void handled++);
    await until('backing off', () => g.state === 'backing_off');
    expect(g.lastError?.code).toBe('group_not_found');
    await rheo.createGroup(stream, 'later');
    await until('consumed once the group exists', () => handled === 2, 15_000);
    expect(g.state).toBe('running');
  });
});

describe('Consumer: renewals', () => {
  it('renews every held lease with one call per round', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(3));
    const hold = gate();
    const g = startConsumer(rheo, { stream, group, maxDemand: 3, concurrency: 3, leaseMs: 60, pollMs: 5 }, () => hold.promise);
    await until('three running', () => g.running === 3);
    await until('three renewal rounds', () => backend.renewRounds.length >= 3);
    expect(backend.renewRounds.slice(0, 3).every((r) => r.length === 3)).toBe(true);
    hold.open();
    await until('acked', async () => (await rheo.lag(stream, group)).lag === 0);
  });

  it('a lease lost on renewal is dropped without a nack and reported; its handler result is not settled', async () => {
    const { rheo, stream, group, backend, clock } = await setup();
    const [e] = await rheo.appendBatch(stream, events(1));
    backend.loseOnRenew(e.id, 1);
    const hold = gate();
    const attempts: number[] = [];
    const lost: string[] = [];
    const g = startConsumer(rheo, { stream, group, maxDemand: 1, leaseMs: 60, pollMs: 5 }, async (l) => {
      attempts.push(l.attempt);
      if (l.attempt === 1) await hold.promise;
    });
    g.on('lease_lost', (l) => lost.push(l.event.id));
    await until('lease_lost', () => lost.length === 1);
    expect(lost).toEqual([e.id]);
    expect(g.inflight).toBe(0);
    expect(g.running).toBe(1); // still bounded by concurrency: no second fetch yet
    hold.open();
    await until('handler finished', () => g.running === 0);
    expect(backend.settles).toEqual([]); // neither acked nor nacked
    clock.advance(60);
    await until('redelivered after expiry and acked', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(attempts).toEqual([1, 2]);
    expect(backend.settles.map((s) => `${s.kind}:${s.attempt}`)).toEqual(['ack:2']);
  });

  it('a failed renewal round keeps the leases for the next round', async () => {
    const { rheo, stream, group, backend } = await setup();
    await rheo.appendBatch(stream, events(2));
    backend.failRenewCall(2, 'backend_unavailable');
    const hold = gate();
    const renewErrors: string[] = [];
    const g = startConsumer(rheo, { stream, group, maxDemand: 2, concurrency: 2, leaseMs: 60, pollMs: 5 }, () => hold.promise);
    g.on('renew_error', ({ error, leases }) => renewErrors.push(`${error.code}:${leases}`));
    await until('a renewal round after the failures', () => backend.calls.renew >= 3);
    expect(renewErrors).toEqual(['backend_unavailable:2', 'backend_unavailable:2']);
    expect(g.inflight).toBe(2);
    hold.open();
    await until('acked', async () => (await rheo.lag(stream, group)).lag === 0);
    expect(backend.settles.every((s) => s.kind === 'ack' && s.answered === 'ok')).toBe(true);
  });
});

describe('Consumer: never an unhandled rejection', () => {
  // Jest handles unhandled rejections itself, so the scenario runs in a child
  // process with its own 'unhandledRejection' listener and reports what it saw.
  function scenario(...args: string[]) {
    const out = execFileSync(
      process.execPath,
      ['--no-warnings', '-r', 'ts-node/register/transpile-only', join(__dirname, 'fixtures', 'outage.ts'), ...args],
      {
        cwd: join(__dirname, '..', '..'),
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    return JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
  }

  it('the detector does see a deliberate unhandled rejection (so the next test can fail)', () => {
    expect(scenario('leak').unhandled).toEqual(['Error: deliberately unhandled']);
  });

  it('handler throws, settle failures, fetch failures, a throwing listener and a backend closed mid-run', () => {
    const r = scenario();
    expect(r.crashed).toBeUndefined();
    expect(r.unhandled).toEqual([]);
    expect(r.drained).toBe('drained');
    expect(r.lastState).toBe('stopped');
    // The run really went through every failure path it claims to.
    expect(r.settleErrors).toEqual(expect.any(Number));
    expect(r.settleErrors as number).toBeGreaterThanOrEqual(5);
    expect(r.fetchErrors as number).toBeGreaterThanOrEqual(3);
    expect(r.handlerErrors as number).toBeGreaterThanOrEqual(1);
    expect(r.warnings as number).toBeGreaterThanOrEqual(1);
  });
});
