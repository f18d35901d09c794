import type { GroupConfig } from '../../core/types';
import type { UpdateGroupRequest } from '../backend';
import { copyGroupConfig } from '../copies';
import { groupOf, wake, type MemoryContext } from './context';
import { recountKeys } from './keys';

// The group-settings section: a group's settings changed in place (docs/adr/047-changing-a-group-in-place.md).
// The claim and the settle read `config` from the group's record at each decision, so the new one decides from now on.

export async function updateGroup(ctx: MemoryContext, req: UpdateGroupRequest): Promise<GroupConfig> {
  const { s, g } = groupOf(ctx, req.stream, req.group);
  const more = req.keyConcurrency !== null && req.keyConcurrency > (g.config.keyConcurrency ?? Infinity);
  g.config = {
    ...g.config,
    maxAttempts: req.maxAttempts,
    retry: { ...req.retry },
    keyConcurrency: req.keyConcurrency,
    groupConcurrency: req.groupConcurrency,
    rateLimit: req.rateLimit && { ...req.rateLimit },
  };
  if (more) {
    // More places per key: waiting events take them now, not at their key's next ending.
    const now = ctx.clock.now();
    g.parts.forEach((part, p) => recountKeys(s, g, part, p, now));
    wake(s);
  }
  return copyGroupConfig(g.config);
}
