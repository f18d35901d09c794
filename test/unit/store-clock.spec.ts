// The store clock (ADR 041): the offset measured against a store-time reader, the
// sample kept, the refresh and its failures, the skew warning, the channel, and
// the options it refuses. The reader is a function over a manual "store" clock, so
// every round trip and every offset is chosen by the test; nothing sleeps.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS, ManualClock, RheoError, storeClock } from '../../lib';
import { CLOCK_SKEW_WARN_MS, StoreClock } from '../../lib/core/clock';

/** A store `offset` ms off the process's manual clock, whose reads take `rtts[i]` ms of the process's clock each. */
function store(processClock: ManualClock, offset: number, rtts: number[] = [0]) {
  let i = 0;
  const reader = jest.fn(async () => {
    const rtt = rtts[Math.min(i++, rtts.length - 1)];
    processClock.advance(rtt / 2);
    const t = processClock.now() + offset;
    processClock.advance(rtt / 2);
    return t;
  });
  return reader;
}

function caught(fn: () => unknown): RheoError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RheoError) return err;
    throw err;
  }
  throw new Error('expected a RheoError');
}

describe('storeClock', () => {
  afterEach(() => {
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  it('adds the offset measured at the midpoint of the round trip; now() reads nothing from the store', async () => {
    const base = new ManualClock(1_000_000);
    const clock = storeClock(base, { refreshMs: 0 });
    expect(clock.errorMs).toBe(Number.POSITIVE_INFINITY);
    const read = store(base, 250, [40, 40, 40]);
    const detach = await clock.attach('test', read);
    expect(clock.offsetMs).toBe(250);
    expect(clock.errorMs).toBe(20);
    const calls = read.mock.calls.length;
    for (let i = 0; i < 1000; i++) clock.now();
    expect(clock.now()).toBe(base.now() + 250);
    expect(read.mock.calls.length).toBe(calls);
    base.advance(5000);
    expect(clock.now()).toBe(base.now() + 250);
    detach();
  });

  it('keeps the sample with the shortest round trip (the tightest bound)', async () => {
    const base = new ManualClock(0);
    const clock = new StoreClock(base, { refreshMs: 0 });
    // The slow samples see the store late in their round trip: their midpoints are off.
    let n = 0;
    const read = async () => {
      const rtt = [400, 10, 300][n++];
      base.advance(rtt * 0.9);
      const t = base.now() + 1000;
      base.advance(rtt * 0.1);
      return t;
    };
    await clock.attach('test', read);
    expect(clock.errorMs).toBe(5);
    expect(clock.offsetMs).toBe(1000 + 4);
  });

  it('fails the start when the store cannot be read, and a failed refresh keeps the last offset', async () => {
    const base = new ManualClock(0);
    const clock = storeClock(base, { refreshMs: 0 });
    await expect(clock.attach('test', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    await expect(clock.sync()).rejects.toThrow(RheoError);
    let up = true;
    await clock.attach('test', async () => {
      if (!up) throw new Error('down');
      return base.now() + 700;
    });
    expect(clock.offsetMs).toBe(700);
    up = false;
    await expect(clock.sync()).rejects.toThrow('down');
    expect(clock.offsetMs).toBe(700);
    expect(clock.now()).toBe(base.now() + 700);
  });

  it('refreshes in the background every refreshMs while attached, a failure swallowed, and stops once detached', async () => {
    jest.useFakeTimers();
    const base = new ManualClock(0);
    const clock = storeClock(base, { refreshMs: 10_000 });
    let offset = 100;
    let fail = false;
    const read = jest.fn(async () => {
      if (fail) throw new Error('down');
      return base.now() + offset;
    });
    const detach = await clock.attach('test', read);
    expect(read).toHaveBeenCalledTimes(3);
    offset = 300; // the store's time jumped
    await jest.advanceTimersByTimeAsync(10_000);
    expect(read).toHaveBeenCalledTimes(6);
    expect(clock.offsetMs).toBe(300);
    fail = true;
    await jest.advanceTimersByTimeAsync(10_000);
    expect(clock.offsetMs).toBe(300);
    detach();
    const after = read.mock.calls.length;
    await jest.advanceTimersByTimeAsync(60_000);
    expect(read).toHaveBeenCalledTimes(after);
  });

  it('warns once beyond the threshold, publishes rheo:clock_skew at each such measurement, and clears when fixed', async () => {
    const emitted = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const messages: unknown[] = [];
    const onSkew = (m: unknown) => messages.push(m);
    subscribe(CHANNELS.clockSkew, onSkew);
    try {
      const base = new ManualClock(0);
      const clock = storeClock(base, { refreshMs: 0 });
      let offset = CLOCK_SKEW_WARN_MS; // at the threshold: not reported
      await clock.attach('postgres', async () => base.now() + offset);
      expect(clock.warning()).toBeUndefined();
      expect(messages).toEqual([]);
      offset = -45_000; // the process is 45 s ahead
      await clock.sync();
      await clock.sync();
      expect(clock.warning()).toMatch(/^this process's clock is 45000 ms ahead of the store's/);
      expect(messages).toEqual([
        { backend: 'postgres', offsetMs: -45_000, errorMs: 0, thresholdMs: CLOCK_SKEW_WARN_MS },
        { backend: 'postgres', offsetMs: -45_000, errorMs: 0, thresholdMs: CLOCK_SKEW_WARN_MS },
      ]);
      expect(emitted).toHaveBeenCalledTimes(1);
      expect(emitted.mock.calls[0][0]).toMatch(/^nestjs-rheo postgres backend: this process's clock is 45000 ms ahead/);
      expect(emitted.mock.calls[0][1]).toEqual({ type: 'RheoWarning', code: 'RHEO_CLOCK_SKEW' });
      offset = 45_000;
      await clock.sync();
      expect(clock.warning()).toMatch(/45000 ms behind the store's/);
      offset = 3;
      await clock.sync();
      expect(clock.warning()).toBeUndefined();
      expect(emitted).toHaveBeenCalledTimes(1);
    } finally {
      unsubscribe(CHANNELS.clockSkew, onSkew);
    }
  });

  it('does not report an offset within its own measurement error of the threshold', async () => {
    const base = new ManualClock(0);
    const clock = storeClock(base, { refreshMs: 0 });
    // A 1 s round trip: an offset of 1.3 s may be 0.8 s.
    await clock.attach('test', store(base, CLOCK_SKEW_WARN_MS + 300, [1000]));
    expect(clock.errorMs).toBe(500);
    expect(clock.warning()).toBeUndefined();
  });

  it('refuses a base that is not a clock, an unknown option and a bad refreshMs, naming the field', () => {
    expect(caught(() => storeClock({} as never))).toMatchObject({ code: 'invalid_argument', field: 'storeClock.base' });
    expect(caught(() => storeClock(undefined, { every: 1 } as never))).toMatchObject({
      code: 'invalid_argument',
      field: 'storeClock.options.every',
      message: 'storeClock.options.every is not a storeClock option (use refreshMs)',
    });
    for (const refreshMs of [-1, 1.5, Number.NaN, 'often'])
      expect(caught(() => storeClock(undefined, { refreshMs } as never))).toMatchObject({
        code: 'invalid_argument',
        field: 'storeClock.options.refreshMs',
      });
  });
});
