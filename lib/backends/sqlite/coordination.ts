// Coordination on SQLite: named turns for background work across the processes
// sharing the file (a row in rheo_jobs, written in the one writer's transaction),
// and a consumer's wait for new work (in-process: only this process's writes wake it).
import type { WaitRequest } from '../backend';
import type { SqliteContext } from './context';

export async function claimTurn(ctx: SqliteContext, job: string, holder: string, ttlMs: number): Promise<boolean> {
  await ctx.base.init();
  const now = ctx.clock.now();
  return ctx.write('claimTurn', () => ctx.stmt(ctx.retention.claimTurn).run(job, holder, now + ttlMs, now).changes === 1);
}

export async function releaseTurn(ctx: SqliteContext, job: string, holder: string): Promise<boolean> {
  await ctx.base.init();
  return ctx.write('releaseTurn', () => ctx.stmt(ctx.removal.releaseTurn).run(job, holder).changes === 1);
}

export function wait(ctx: SqliteContext, req: WaitRequest): Promise<void> {
  return ctx.board.wait(req);
}
