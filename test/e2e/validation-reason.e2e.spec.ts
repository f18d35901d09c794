import { BadRequestException, Controller, type INestApplication, Injectable, type PipeTransform, ValidationPipe } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { IsPositive, IsString } from 'class-validator';
import { memoryBackend, RheoClient, RheoConsumer, RheoContext, RheoModule, type JsonValue } from '../../lib';
import { MAX_REASON_LENGTH } from '../../lib/core/limits';
import { startHybrid } from './support';
import { until } from '../support/until';

/** The DTO a newcomer writes: the validator's messages say which field is wrong and why. */
class ChargeDto {
  @IsPositive()
  amount!: number;

  @IsString()
  currency!: string;
}

const LONG_MESSAGE = 'x'.repeat(300);

/** A pipe whose refusal lists more than a reason may hold. */
@Injectable()
class VerbosePipe implements PipeTransform {
  transform(): never {
    throw new BadRequestException(Array.from({ length: 10 }, (_, i) => `field${i} ${LONG_MESSAGE}`));
  }
}

const handled: string[] = [];
const fast = { pollMs: 10, maxAttempts: 5 };

@Controller()
class BillingController {
  @RheoConsumer({ stream: 'charges', group: 'billing', ...fast })
  charge(@Payload(new ValidationPipe()) charge: ChargeDto, @Ctx() ctx: RheoContext) {
    handled.push(`${ctx.event.id}:${charge.amount}${charge.currency}`);
  }

  @RheoConsumer({ stream: 'verbose', group: 'billing', ...fast })
  verbose(@Payload(VerbosePipe) payload: JsonValue) {
    void payload;
  }
}

describe('a payload refused by a ValidationPipe', () => {
  let app: INestApplication;
  let client: RheoClient;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'charges' }, { name: 'verbose' }] })],
      controllers: [BillingController],
    });
    client = app.get(RheoClient);
  });

  afterAll(async () => {
    await app.close();
  });

  it("is dead-lettered at once with the validator's messages in the reason", async () => {
    const bad = await client.append('charges', { payload: { amount: -5 } });
    const good = await client.append('charges', { payload: { amount: 12, currency: 'EUR' } });
    await until('charges settled', async () => (await client.lag('charges', 'billing')).lag === 0);
    expect(handled).toEqual([`${good.id}:12EUR`]);
    const dead = await client.deadLetters('charges', 'billing');
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ eventId: bad.id, attempt: 1 });
    expect(dead[0].reason).toBe('Bad Request Exception: amount must be a positive number; currency must be a string');
  });

  it('keeps the reason bounded however many messages the pipe returns', async () => {
    const bad = await client.append('verbose', { payload: { n: 1 } });
    await until('verbose settled', async () => (await client.lag('verbose', 'billing')).lag === 0);
    const [dead] = await client.deadLetters('verbose', 'billing');
    expect(dead).toMatchObject({ eventId: bad.id, attempt: 1 });
    expect(dead.reason.length).toBe(MAX_REASON_LENGTH);
    expect(dead.reason.startsWith(`Bad Request Exception: field0 ${LONG_MESSAGE}; field1 `)).toBe(true);
  });
});
