import type { GroupPause } from '../../core/types';
import type { PauseGroupRequest } from '../backend';
import { groupOf, wake, type MemGroup, type MemoryContext } from './context';

// The pause section (docs/adr/046-pausing-a-group.md): the pause lives on the group's
// record; the claim reads it at each fetch, so it holds from the moment pauseGroup returns.

export async function pauseGroup(ctx: MemoryContext, req: PauseGroupRequest): Promise<GroupPause> {
  const { g } = groupOf(ctx, req.stream, req.group);
  g.pause = { pausedAt: new Date(ctx.clock.now()), until: req.until, reason: req.reason, by: req.by };
  return copyPause(g.pause);
}

export async function resumeGroup(ctx: MemoryContext, stream: string, group: string): Promise<boolean> {
  const { s, g } = groupOf(ctx, stream, group);
  const held = activePause(g, ctx.clock.now()) !== null;
  delete g.pause;
  if (held) wake(s);
  return held;
}

/** The group's pause while it holds at `now` (no `until`, or one still ahead), else null. */
export function activePause(g: MemGroup, now: number): GroupPause | null {
  const p = g.pause;
  return p && (p.until === null || p.until.getTime() > now) ? copyPause(p) : null;
}

function copyPause(p: GroupPause): GroupPause {
  return { pausedAt: new Date(p.pausedAt), until: p.until && new Date(p.until), reason: p.reason, by: p.by };
}
