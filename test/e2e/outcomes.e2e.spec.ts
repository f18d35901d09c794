import {
  type ArgumentsHost,
  BadRequestException,
  Catch,
  type CallHandler,
  type CanActivate,
  Controller,
  type ExecutionContext,
  type INestApplication,
  Injectable,
  type NestInterceptor,
  ParseIntPipe,
  type RpcExceptionFilter,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { type Observable, tap, throwError } from 'rxjs';
import {
  ManualClock,
  memoryBackend,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoModule,
  RheoReject,
  RheoRetry,
  RheoServer,
  type JsonValue,
  type Outcome,
} from '../../lib';
import { startHybrid } from './support';
import { until } from '../support/until';

const clock = new ManualClock(Date.UTC(2026, 5, 1));
const deliveries: Record<string, Array<{ id: string; attempt: number; payload: JsonValue }>> = {};
const log: string[] = [];
const fast = { pollMs: 10, retry: { initialMs: 0, maxMs: 0 } };

function record(ctx: RheoContext, payload: JsonValue): void {
  (deliveries[ctx.stream] ??= []).push({ id: ctx.event.id, attempt: ctx.attempt, payload });
}

@Injectable()
class AllowedTypeGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const ctx = context.switchToRpc().getContext<RheoContext>();
    log.push(`guard:${ctx.event.type}`);
    return ctx.event.type === 'allowed';
  }
}

@Injectable()
class AroundInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const ctx = context.switchToRpc().getContext<RheoContext>();
    log.push(`before:${ctx.event.id}`);
    return next.handle().pipe(tap({ complete: () => log.push(`after:${ctx.event.id}`) }));
  }
}

/** A user filter decides: a TypeError means the event can never be handled. */
@Catch(TypeError)
class TypeErrorToReject implements RpcExceptionFilter<TypeError> {
  catch(exception: TypeError, host: ArgumentsHost): Observable<never> {
    void host;
    return throwError(() => new RheoReject(`unusable: ${exception.message}`));
  }
}

@Controller()
class OutcomesController {
  @RheoConsumer({ stream: 'flaky', group: 'g', maxAttempts: 3, ...fast })
  alwaysFails(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    record(ctx, payload);
    throw new Error(`boom on attempt ${ctx.attempt}`);
  }

  @RheoConsumer({ stream: 'recovers', group: 'g', maxAttempts: 3, ...fast })
  async failsOnce(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    record(ctx, payload);
    if (ctx.attempt === 1) throw new Error('transient');
  }

  @RheoConsumer({ stream: 'poison', group: 'g', maxAttempts: 5, ...fast })
  rejects(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    record(ctx, payload);
    throw new RheoReject('bad curve');
  }

  @RheoConsumer({ stream: 'later', group: 'g', ...fast })
  retriesLater(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    record(ctx, payload);
    if (ctx.attempt === 1) throw new RheoRetry('not yet', { delayMs: 60_000 });
  }

  @RheoConsumer({ stream: 'typed', group: 'g', maxAttempts: 5, ...fast })
  parsed(@Payload('amount', ParseIntPipe) amount: number, @Ctx() ctx: RheoContext) {
    record(ctx, amount);
  }

  @RheoConsumer({ stream: 'guarded', group: 'g', maxAttempts: 5, ...fast })
  @UseGuards(AllowedTypeGuard)
  guarded(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    log.push(`handler:${ctx.event.id}`);
    record(ctx, payload);
  }

  @UseInterceptors(AroundInterceptor)
  @RheoConsumer({ stream: 'intercepted', group: 'g', ...fast })
  intercepted(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    log.push(`handler:${ctx.event.id}`);
    record(ctx, payload);
  }

  @RheoConsumer({ stream: 'filtered', group: 'g', maxAttempts: 5, ...fast })
  @UseFilters(TypeErrorToReject)
  filtered(@Payload() payload: { items?: string[] }, @Ctx() ctx: RheoContext) {
    record(ctx, payload as JsonValue);
    return payload.items!.length; // TypeError when items is missing
  }

  @RheoConsumer({ stream: 'bad-request', group: 'g', maxAttempts: 5, ...fast })
  badRequest(@Payload() payload: JsonValue, @Ctx() ctx: RheoContext) {
    record(ctx, payload);
    throw new BadRequestException('amount must be positive');
  }
}

const streams = ['flaky', 'recovers', 'poison', 'later', 'typed', 'guarded', 'intercepted', 'filtered', 'bad-request'];

describe('handler outcomes through the Nest pipeline', () => {
  let app: INestApplication;
  let client: RheoClient;
  const settled: Array<{ stream: string; id: string; outcome: Outcome }> = [];

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: memoryBackend({ clock }), streams: streams.map((name) => ({ name })) })],
      controllers: [OutcomesController],
      providers: [AllowedTypeGuard, AroundInterceptor],
    });
    client = app.get(RheoClient);
    app.get(RheoServer).on('settled', (ref, lease, outcome) => settled.push({ stream: ref.stream, id: lease.event.id, outcome }));
  });

  afterAll(async () => {
    await app.close();
  });

  const caughtUp = (stream: string) => async () => (await client.lag(stream, 'g')).lag === 0;

  it('retries a throwing handler, then dead-letters it after maxAttempts with the error message', async () => {
    const e = await client.append('flaky', { payload: { n: 1 } });
    await until('flaky dead-lettered', caughtUp('flaky'));
    expect(deliveries.flaky.map((d) => d.attempt)).toEqual([1, 2, 3]);
    const [dead] = await client.deadLetters('flaky', 'g');
    expect(dead).toMatchObject({ eventId: e.id, attempt: 3, reason: 'boom on attempt 3' });
    expect((await client.groupInfo('flaky', 'g')).deadLetters).toBe(1);
  });

  it('acks a handler that succeeds on its second attempt, nothing dead-lettered', async () => {
    await client.append('recovers', { payload: { n: 2 } });
    await until('recovers acked', caughtUp('recovers'));
    expect(deliveries.recovers.map((d) => d.attempt)).toEqual([1, 2]);
    expect(await client.deadLetters('recovers', 'g')).toEqual([]);
  });

  it('dead-letters a RheoReject on the first attempt', async () => {
    const e = await client.append('poison', { payload: { curve: [] } });
    await until('poison dead-lettered', caughtUp('poison'));
    expect(deliveries.poison).toHaveLength(1);
    expect(await client.deadLetters('poison', 'g')).toEqual([expect.objectContaining({ eventId: e.id, attempt: 1, reason: 'bad curve' })]);
  });

  it('redelivers a RheoRetry only after its delay', async () => {
    const e = await client.append('later', { payload: { n: 3 } });
    await until('nack settled', () => settled.some((s) => s.id === e.id && s.outcome.kind === 'nack'));
    expect(settled.find((s) => s.id === e.id)!.outcome).toEqual({ kind: 'nack', reason: 'not yet', delayMs: 60_000 });
    // Several more fetch rounds on a frozen clock: the event stays unavailable.
    const group = app.get(RheoServer).unwrap<{ groups: Map<string, { stats: { fetches: number } }> }>().groups.get('later/g')!;
    const fetches = group.stats.fetches;
    await until('three more fetches', () => group.stats.fetches >= fetches + 3);
    expect(deliveries.later).toHaveLength(1);
    expect((await client.lag('later', 'g')).lag).toBe(1);
    clock.advance(60_000);
    await until('later acked', caughtUp('later'));
    expect(deliveries.later.map((d) => d.attempt)).toEqual([1, 2]);
  });

  it('dead-letters a payload refused by a validation pipe at once, and passes the parsed value otherwise', async () => {
    const bad = await client.append('typed', { payload: { amount: 'twelve' } });
    const good = await client.append('typed', { payload: { amount: '12' } });
    await until('typed settled', caughtUp('typed'));
    expect(deliveries.typed).toEqual([{ id: good.id, attempt: 1, payload: 12 }]);
    const dead = await client.deadLetters('typed', 'g');
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ eventId: bad.id, attempt: 1 });
    expect(dead[0].reason).toMatch(/numeric string is expected/);
  });

  it('dead-letters a BadRequestException thrown by the handler at once', async () => {
    await client.append('bad-request', { payload: { amount: -1 } });
    await until('bad-request settled', caughtUp('bad-request'));
    expect(deliveries['bad-request']).toHaveLength(1);
    expect((await client.deadLetters('bad-request', 'g'))[0]).toMatchObject({ attempt: 1, reason: 'amount must be positive' });
  });

  it('runs guards before the handler; a guard that says no dead-letters the event without running it', async () => {
    const denied = await client.append('guarded', { type: 'forbidden', payload: { n: 1 } });
    const allowed = await client.append('guarded', { type: 'allowed', payload: { n: 2 } });
    await until('guarded settled', caughtUp('guarded'));
    expect(log).toContain('guard:forbidden');
    expect(log).toContain('guard:allowed');
    expect(log).not.toContain(`handler:${denied.id}`);
    expect(log.indexOf('guard:allowed')).toBeLessThan(log.indexOf(`handler:${allowed.id}`));
    expect(deliveries.guarded.map((d) => d.id)).toEqual([allowed.id]);
    expect(await client.deadLetters('guarded', 'g')).toEqual([
      expect.objectContaining({ eventId: denied.id, attempt: 1, reason: 'guard denied: Forbidden resource' }),
    ]);
  });

  it('runs interceptors around the handler', async () => {
    const e = await client.append('intercepted', { payload: { n: 1 } });
    await until('intercepted acked', caughtUp('intercepted'));
    const mine = log.filter((l) => l.endsWith(e.id));
    expect(mine).toEqual([`before:${e.id}`, `handler:${e.id}`, `after:${e.id}`]);
  });

  it('lets a user exception filter decide the outcome', async () => {
    const bad = await client.append('filtered', { payload: { note: 'no items' } });
    const good = await client.append('filtered', { payload: { items: ['a'] } });
    await until('filtered settled', caughtUp('filtered'));
    expect(deliveries.filtered.filter((d) => d.id === bad.id)).toHaveLength(1);
    expect(deliveries.filtered.filter((d) => d.id === good.id)).toHaveLength(1);
    const dead = await client.deadLetters('filtered', 'g');
    expect(dead).toHaveLength(1);
    expect(dead[0].eventId).toBe(bad.id);
    expect(dead[0].reason).toMatch(/^unusable: /);
  });
});
