// The facade's group-settings section: a group's stored settings changed in place
// (docs/adr/047-changing-a-group-in-place.md). The changes are checked for their shape
// before anything reaches the store, then against the stored config as a whole, so
// a refusal changes nothing.
import { changedGroup, checkGroupChanges } from '../group-changes';
import type { GroupChanges, GroupConfig } from '../types';
import { checkName } from '../validate';
import type { FacadeContext } from './context';
import { checkFlowSupported } from './registry';

export async function updateGroup(ctx: FacadeContext, stream: string, group: string, changes: GroupChanges): Promise<GroupConfig> {
  checkName('stream', stream);
  checkName('group', group);
  const checked = checkGroupChanges(changes);
  await ctx.init();
  await ctx.stream(stream);
  const stored = await ctx.groupConfig(stream, group);
  const request = changedGroup(stored, checked);
  checkFlowSupported(ctx, { ...request, ordering: stored.ordering });
  try {
    const updated = await ctx.backend.updateGroup(request);
    // This process's copy is replaced at once; other processes' copies decide nothing (the store does).
    ctx.registrations.rememberGroup(updated);
    return updated;
  } catch (err) {
    ctx.registrations.forgetGroup(stream, group);
    throw err;
  }
}
