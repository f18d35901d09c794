// The facade's delivery section: fetch (the claim), renew, settle (ack, nack,
// reject, settleMany) and release. These are the consumer's hot paths: connected,
// and with nobody observing settles, each reaches the backend in the same turn
// with no promise added between the runtime and the store. Every lease handed
// out is frozen (issueLease) and told on the diagnostics channels (published.ts).
import type { FetchedLeases, RenewResult, SettleOp, SettleResult } from '../../backends/backend';
import type { OperationMessage } from '../diagnostics';
import {
  checkFetchOptions,
  checkLeases,
  checkSettles,
  type FetchOptions,
  isIssued,
  issueLease,
  type NackOptions,
  type RejectOptions,
  type SettleRequest,
} from '../delivery-requests';
import { publishLeases, publishSettles, settlesObserved } from '../published';
import { checkLeaseMs, checkOptions, checkPartitions } from '../requests';
import { settleEach } from '../settle';
import type { Lease } from '../types';
import { checkName } from '../validate';
import { counted, type FacadeContext, type MessageDraft } from './context';

export async function fetch(ctx: FacadeContext, stream: string, group: string, options: FetchOptions): Promise<FetchedLeases> {
  checkName('stream', stream);
  checkName('group', group);
  const { limit, leaseMs, consumerId } = checkFetchOptions(options);
  const leases = await ctx.traced(
    'fetch',
    () => ({ operation: 'fetch', stream, group, consumerId }),
    async () => {
      const known = ctx.ensured(stream);
      const info = known instanceof Promise ? await known : known;
      const partitions = checkPartitions('partitions', options.partitions, info.partitions);
      return ctx.backend.fetch({ stream, group, limit, leaseMs, consumerId, partitions });
    },
    counted,
  );
  for (const lease of leases) issueLease(lease);
  publishLeases(stream, group, consumerId, leases);
  return leases;
}

export async function renew<P>(ctx: FacadeContext, lease: Lease<P>, options: { leaseMs?: number }): Promise<Lease<P>> {
  checkLeases([lease]);
  checkOptions('renew', options);
  const leaseMs = checkLeaseMs(options.leaseMs);
  // The lease's failure is thrown inside the trace: a lost lease reaches `rheo:renew`'s `error`.
  const expiresAt = await ctx.traced(
    'renew',
    () => leaseMessage('renew', [lease]),
    async () => {
      const [result] = await renewChecked(ctx, [lease], leaseMs);
      if (!result.ok) throw result.error;
      return result.expiresAt;
    },
  );
  const renewed = { ...lease, expiresAt };
  return isIssued(lease) ? issueLease(renewed) : renewed;
}

export async function renewMany(ctx: FacadeContext, leases: Lease<unknown>[], options: { leaseMs?: number }): Promise<RenewResult[]> {
  checkLeases(leases);
  checkOptions('renew', options);
  const leaseMs = checkLeaseMs(options.leaseMs);
  if (leases.length === 0) return [];
  return ctx.traced(
    'renew',
    () => leaseMessage('renew', leases),
    () => renewChecked(ctx, leases, leaseMs),
  );
}

function renewChecked(ctx: FacadeContext, leases: Lease<unknown>[], leaseMs: number): Promise<RenewResult[]> {
  if (ctx.isConnected) return ctx.backend.renew(leases, leaseMs);
  return ctx.init().then(() => ctx.backend.renew(leases, leaseMs));
}

export async function ack(ctx: FacadeContext, lease: Lease<unknown>): Promise<void> {
  return settleOne(ctx, 'ack', { kind: 'ack', lease });
}

export async function nack(ctx: FacadeContext, lease: Lease<unknown>, options: NackOptions): Promise<void> {
  checkOptions('nack', options);
  return settleOne(ctx, 'nack', { kind: 'nack', lease, reason: options.reason, delayMs: options.delayMs });
}

export async function reject(ctx: FacadeContext, lease: Lease<unknown>, options: RejectOptions): Promise<void> {
  checkOptions('reject', options);
  return settleOne(ctx, 'reject', { kind: 'reject', lease, reason: options.reason });
}

async function settleOne(ctx: FacadeContext, operation: 'ack' | 'nack' | 'reject', request: SettleRequest): Promise<void> {
  const [op] = checkSettles([request]);
  // The lease's failure is thrown inside the trace: a stale ack reaches `rheo:ack`'s `error`.
  return ctx.traced(
    operation,
    () => {
      const m = leaseMessage(operation, [op.lease]);
      if (op.kind !== 'ack') m.reason = op.reason;
      return m;
    },
    async () => {
      const [result] = await settleChecked(ctx, [op]);
      if (!result.ok) throw result.error;
    },
  );
}

export async function settleMany(ctx: FacadeContext, requests: SettleRequest[]): Promise<SettleResult[]> {
  const ops = checkSettles(requests);
  if (ops.length === 0) return [];
  return ctx.traced(
    'settleMany',
    () =>
      leaseMessage(
        'settleMany',
        ops.map((o) => o.lease),
      ),
    () => settleChecked(ctx, ops),
  );
}

function settleChecked(ctx: FacadeContext, ops: SettleOp[]): Promise<SettleResult[]> {
  // The hot path: no extra promise between the runtime's settle batch and the store (settleEach adds one
  // only for a batch of several ops, to settle them one by one should one op break the batch).
  if (ctx.isConnected && !settlesObserved()) return settleEach(ctx.settleOps, ops);
  return settleObserved(ctx, ops);
}

/** A settle whose outcomes someone listens to (or before the first connect). */
async function settleObserved(ctx: FacadeContext, ops: SettleOp[]): Promise<SettleResult[]> {
  await ctx.init();
  if (!settlesObserved()) return settleEach(ctx.settleOps, ops);
  // Telling a retry from a dead letter needs each group's maxAttempts: read once per group, before the settle.
  for (const { lease } of ops) {
    if (ctx.registrations.group(lease.stream, lease.group)) continue;
    const cfg = await ctx.backend.getGroup(lease.stream, lease.group).catch(() => null);
    if (cfg) ctx.registrations.rememberGroup(cfg);
  }
  const results = await settleEach(ctx.settleOps, ops);
  publishSettles(ops, results, ctx.registrations);
  return results;
}

export async function releaseMany(ctx: FacadeContext, leases: Lease<unknown>[]): Promise<SettleResult[]> {
  checkLeases(leases);
  if (leases.length === 0) return [];
  await ctx.init();
  return ctx.backend.release(leases);
}

/** A message about leases: one lease's identity in full, or the batch's size (and its group when they share one). */
function leaseMessage(operation: OperationMessage['operation'], leases: Lease<unknown>[]): MessageDraft {
  const first = leases[0];
  const m: MessageDraft = { operation, count: leases.length };
  if (!first) return m;
  if (leases.every((l) => l.stream === first.stream && l.group === first.group)) {
    m.stream = first.stream;
    m.group = first.group;
  }
  if (leases.length === 1) {
    m.eventId = first.event.id;
    m.partition = first.event.partition;
    m.sequence = first.event.sequence;
    m.attempt = first.attempt;
    m.consumerId = first.consumerId;
  }
  return m;
}
