import { Controller, type INestApplication } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { memoryBackend, RheoClient, RheoConsumer, RheoContext, RheoModule, RheoReject, type JsonValue } from '../../lib';
import { startHybrid } from './support';
import { until } from '../support/until';

const state = { rejectPoison: true };
const handled: Array<{ id: string; attempt: number; payload: JsonValue }> = [];

@Controller()
class LedgerController {
  @RheoConsumer({ stream: 'ledger', group: 'posting', pollMs: 10 })
  onEntry(@Payload() payload: { amount: number }, @Ctx() ctx: RheoContext) {
    if (payload.amount < 0 && state.rejectPoison) throw new RheoReject('negative amount');
    handled.push({ id: ctx.event.id, attempt: ctx.attempt, payload });
  }
}

describe('RheoClient admin surface against running consumers', () => {
  let app: INestApplication;
  let client: RheoClient;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'ledger', partitions: 2 }] })],
      controllers: [LedgerController],
    });
    client = app.get(RheoClient);
  });

  afterAll(async () => {
    await app.close();
  });

  const caughtUp = async () => (await client.lag('ledger', 'posting')).lag === 0;

  it('redrives a dead letter to the running consumer once the cause is fixed', async () => {
    const bad = await client.append('ledger', { key: 'acc-1', payload: { amount: -5 } });
    await until('dead-lettered', async () => (await client.deadLetters('ledger', 'posting')).length === 1);
    state.rejectPoison = false;
    expect(await client.redrive('ledger', 'posting', { eventIds: [bad.id] })).toBe(1);
    await until('redriven event handled', () => handled.some((h) => h.id === bad.id));
    await until('caught up', caughtUp);
    expect(await client.deadLetters('ledger', 'posting')).toEqual([]);
  });

  it('replays a group from a sequence: the consumer sees those events again', async () => {
    const events = await client.appendBatch(
      'ledger',
      [1, 2, 3].map((amount) => ({ key: 'acc-2', payload: { amount } })),
    );
    await until('caught up', caughtUp);
    const before = handled.length;
    const partition = events[0].partition;
    // afterSequence is exclusive: re-open what follows events[0].
    const reopened = await client.replay('ledger', 'posting', { afterSequence: events[0].sequence, partitions: [partition] });
    expect(reopened).toBe(2);
    await until('replayed events handled', () => {
      const again = handled.slice(before).map((h) => h.id);
      return again.includes(events[1].id) && again.includes(events[2].id);
    });
    expect(handled.slice(before).map((h) => h.id)).not.toContain(events[0].id);
    await until('caught up', caughtUp);
  });

  it('queries and pages through the stream, and refuses reset without confirm', async () => {
    const page = await client.queryPage({ stream: 'ledger', where: { key: 'acc-2' }, limit: 2 });
    expect(page.items).toHaveLength(2);
    expect(page.nextCursor).not.toBeNull();
    const rest = await client.query({ stream: 'ledger', where: { key: 'acc-2' }, cursor: page.nextCursor! });
    expect(rest.map((e) => e.payload)).toEqual([{ amount: 3 }]);
    await expect(client.reset('ledger', 'posting', { confirm: false })).rejects.toMatchObject({ code: 'confirm_required' });
    expect((await client.listGroups('ledger')).map((g) => g.group)).toEqual(['posting']);
  });
});
