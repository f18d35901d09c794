import type { AppendInput, JsonValue, Lease } from '../core/types';
import type { Backend } from '../backends/backend';
import type { Capabilities } from '../backends/capabilities';
import type { RheoErrorCode } from '../core/errors';
import type { Clock, ManualClock } from '../core/clock';
import { Rheo } from '../core/rheo';
import { RheoError } from '../core/errors';

/**
 * What every case of the conformance suite works with. The fields are filled in
 * the suite's beforeAll, so cases read them inside `it` bodies only.
 */
export interface ConformanceContext {
  rheo: Rheo;
  backend: Backend;
  clock: ManualClock;
  /** Declared capabilities, known at registration time (from `unreachable()`), so gating registers or omits cases. */
  caps: Capabilities;
  /** The backend implements the optional `wait()` wake-up hint (also known at registration time). */
  waits: boolean;
  /** A name unique to this run: stream and group names never collide between cases. */
  name(prefix: string): string;
  /**
   * Durable backends only (`guarantees.durable`): another backend on the same
   * store, as a restarted process would open it (the target's `create` again),
   * not yet init'ed; the case closes it. Absent for a backend that keeps nothing.
   */
  reopen?: () => Promise<Backend>;
  /**
   * Distributed backends only (`guarantees.distributed`): another backend on the
   * same store, as another process would open it, on `clock` (the target's
   * `create(clock)`), not yet init'ed; the case closes it.
   */
  open?: (clock: Clock) => Promise<Backend>;
}

/** The suite's lease length; cases advance the clock past it to expire leases. */
export const LEASE_MS = 10_000;

/** Assert that `promise` rejects with a RheoError of `code` (and `field`, when given). */
export async function expectCode(promise: Promise<unknown>, code: RheoErrorCode, field?: string): Promise<RheoError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  if (!(caught instanceof RheoError))
    throw new Error(`expected RheoError ${code}, got ${caught === undefined ? 'success' : String(caught)}`);
  expect(caught.code).toBe(code);
  if (field !== undefined) expect(caught.field).toBe(field);
  return caught;
}

/** Create a stream with `partitions` partitions and a unique name. */
export async function newStream(ctx: ConformanceContext, partitions = 1): Promise<string> {
  const stream = ctx.name('s');
  await ctx.rheo.createStream(stream, { partitions });
  return stream;
}

/** `n` events pinned round-robin to partitions, with payload `{ n: i }`. */
export function events(n: number, partitions = 1, extra: (i: number) => Partial<AppendInput> = () => ({})): AppendInput[] {
  return Array.from({ length: n }, (_, i) => ({ partition: i % partitions, type: 'test', payload: { n: i } as JsonValue, ...extra(i) }));
}

/** Fetch until the group has nothing claimable right now; returns every lease taken. */
export async function drain(ctx: ConformanceContext, stream: string, group: string, leaseMs = LEASE_MS, limit = 50): Promise<Lease[]> {
  const all: Lease[] = [];
  for (;;) {
    const got = await ctx.rheo.fetch(stream, group, { limit, leaseMs });
    if (got.length === 0) return all;
    all.push(...got);
  }
}

/** "partition:sequence" of each lease's event, in order: compact expectations. */
export function positions(leases: Lease[]): string[] {
  return leases.map((l) => `${l.event.partition}:${l.event.sequence}`);
}

/** Per-partition high watermarks, through a probe group that never consumes. */
export async function highWatermarks(ctx: ConformanceContext, stream: string): Promise<number[]> {
  await ctx.rheo.createGroup(stream, 'hwm-probe', { ifNotExists: true });
  const lag = await ctx.rheo.lag(stream, 'hwm-probe');
  return lag.partitions.map((p) => p.highWatermark);
}

/** Per-partition frontiers of a group. */
export async function frontiers(ctx: ConformanceContext, stream: string, group: string): Promise<number[]> {
  return (await ctx.rheo.lag(stream, group)).partitions.map((p) => p.frontier);
}

/**
 * Another process on the suite's store, for the cases of one describe: a second
 * backend as another process would open it (`open`, on `clock` or the suite's, else
 * `reopen`), or, where the store is this process's own, a second Rheo over the same
 * backend. Each backend it opens is closed after its case.
 */
export function otherProcesses(ctx: ConformanceContext): (clock?: Clock) => Promise<Rheo> {
  let opened: Backend[] = [];
  afterEach(async () => {
    await Promise.all(opened.map((b) => b.close()));
    opened = [];
  });
  return async (clock) => {
    const make = ctx.open ? () => ctx.open!(clock ?? ctx.clock) : ctx.reopen;
    if (!make) return new Rheo(ctx.backend);
    const backend = await make();
    opened.push(backend);
    const rheo = new Rheo(backend);
    await rheo.init();
    return rheo;
  };
}
