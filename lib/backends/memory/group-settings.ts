import type { GroupConfig } from '../../core/types';
import type { UpdateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import { groupOf, type MemoryContext } from './context';

// The group-settings section: a group's settings changed in place (docs/adr/047-changing-a-group-in-place.md).
// The claim and the settle read `config` from the group's record at each decision, so the new one decides from now on.

export async function updateGroup(ctx: MemoryContext, req: UpdateGroupRequest): Promise<GroupConfig> {
  const { g } = groupOf(ctx, req.stream, req.group);
  g.config = { ...g.config, maxAttempts: req.maxAttempts, retry: { ...req.retry } };
  return copyGroupConfig(g.config);
}
