// The coordination section of the PostgreSQL backend: the turns of background
// jobs (claimTurn, releaseTurn) and a consumer's wait for new work (LISTEN/NOTIFY
// through the listener, and this process's own wake-ups through the board).
import type { WaitRequest } from '../backend';
import type { PostgresContext } from './context';

export async function claimTurn(ctx: PostgresContext, job: string, holder: string, ttlMs: number): Promise<boolean> {
  const rows = await ctx.q(ctx.plans.coordination.claimTurn, [job, holder, ctx.clock.now(), ttlMs], 'write', 'claimTurn');
  return rows.length === 1;
}

export async function releaseTurn(ctx: PostgresContext, job: string, holder: string): Promise<boolean> {
  return (await ctx.q(ctx.plans.removal.releaseTurn, [job, holder], 'write', 'releaseTurn')).length === 1;
}

/** Starts the LISTEN connection on first use; resolves at once before the backend started or once it is closed. */
export function wait(ctx: PostgresContext, req: WaitRequest): Promise<void> {
  if (!ctx.listener || ctx.isClosed()) return Promise.resolve();
  void ctx.listener.start();
  return ctx.board.wait(req);
}
