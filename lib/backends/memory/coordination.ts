import type { WaitRequest } from '../backend';
import { open, type MemoryContext } from './context';

// The coordination section: turns (one holder of a job at a time, in this process) and
// waiting for news of a stream (an append, a settle that frees the next event, a close).

export async function claimTurn(ctx: MemoryContext, job: string, holder: string, ttlMs: number): Promise<boolean> {
  open(ctx);
  const now = ctx.clock.now();
  const turn = ctx.turns.get(job);
  if (turn && turn.holder !== holder && turn.until > now) return false;
  ctx.turns.set(job, { holder, until: now + ttlMs });
  return true;
}

export async function releaseTurn(ctx: MemoryContext, job: string, holder: string): Promise<boolean> {
  open(ctx);
  if (ctx.turns.get(job)?.holder !== holder) return false;
  ctx.turns.delete(job);
  return true;
}

/** Resolves on the stream's next wake-up, the timeout or the abort, whichever comes first; at once when closed. */
export function wait(ctx: MemoryContext, req: WaitRequest): Promise<void> {
  const s = ctx.streams.get(req.stream);
  if (!s || ctx.closed || req.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      req.signal.removeEventListener('abort', done);
      s.waiters.delete(done);
      resolve();
    };
    const timer = setTimeout(done, req.timeoutMs);
    req.signal.addEventListener('abort', done);
    s.waiters.add(done);
  });
}
