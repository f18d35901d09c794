// The facade's retention section: trim (apply a stream's retention now) and the
// purge of a group's dead letters. Trim reads the stream's retention fresh from
// the store (another process may have changed it, so the remembered registration
// will not do) and turns `maxAgeMs` into a time by the backend's clock (the
// store's time where it has one, ADR 041).
import { checkPurge, checkTrimOptions } from '../requests';
import type { PurgeDeadLettersOptions, TrimOptions, TrimResult } from '../types';
import { checkName } from '../validate';
import { counted, type FacadeContext } from './context';

export async function trim(ctx: FacadeContext, stream: string, options: TrimOptions): Promise<TrimResult> {
  checkName('stream', stream);
  const { force } = checkTrimOptions(options);
  return ctx.traced(
    'trim',
    () => ({ operation: 'trim', stream }),
    async () => {
      await ctx.init();
      const info = await ctx.freshStream(stream);
      const retention = info.retention ?? {};
      const before = retention.maxAgeMs === undefined ? undefined : new Date(ctx.backend.clock.now() - retention.maxAgeMs);
      return ctx.backend.trim({ stream, before, maxEvents: retention.maxEvents, force });
    },
    (result, m) => (m.count = result.removed),
  );
}

export async function purgeDeadLetters(
  ctx: FacadeContext,
  stream: string,
  group: string,
  options: PurgeDeadLettersOptions,
): Promise<number> {
  checkName('stream', stream);
  checkName('group', group);
  const before = checkPurge(options);
  return ctx.traced(
    'purgeDeadLetters',
    () => ({ operation: 'purgeDeadLetters', stream, group }),
    async () => {
      await ctx.init();
      await ctx.stream(stream);
      await ctx.groupConfig(stream, group);
      return ctx.backend.purgeDeadLetters(stream, group, before);
    },
    counted,
  );
}
