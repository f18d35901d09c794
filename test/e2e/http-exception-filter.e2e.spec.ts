import { Body, Controller, Get, type INestApplication, NotFoundException, Param, Post } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Ctx, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  type JsonValue,
  memoryBackend,
  RheoClient,
  RheoConsumer,
  RheoContext,
  RheoError,
  type RheoErrorCode,
  RheoHttpExceptionFilter,
  RheoModule,
  RheoServer,
} from '../../lib';
import { RHEO_ERROR_CODES } from '../../lib/core/errors';
import { until } from '../support/until';

/** The mapping the filter promises (docs/adr/016). */
const STATUS: Record<RheoErrorCode, number> = {
  invalid_argument: 400,
  stream_not_found: 404,
  group_not_found: 404,
  already_exists: 409,
  stale_lease: 409,
  receipt_mismatch: 409,
  lease_held: 409,
  payload_too_large: 413,
  confirm_required: 428,
  backend_unavailable: 503,
  ambiguous: 500,
  failed: 500,
};

const consumed: number[] = [];

@Controller()
class EventsController {
  constructor(private readonly rheo: RheoClient) {}

  @Get('codes/:code')
  code(@Param('code') code: RheoErrorCode): never {
    throw new RheoError(code, `secret detail of ${code}`, code === 'invalid_argument' ? { field: 'amount' } : {});
  }

  @Get('lag/:stream/:group')
  lag(@Param('stream') stream: string, @Param('group') group: string) {
    return this.rheo.lag(stream, group);
  }

  @Post('events/:stream')
  append(@Param('stream') stream: string, @Body() payload: JsonValue) {
    return this.rheo.append(stream, { payload });
  }

  @Post('reset')
  reset() {
    return this.rheo.reset('orders', 'billing', { confirm: false });
  }

  @Get('boom')
  boom(): never {
    throw new Error('not a RheoError');
  }

  @Get('missing')
  missing(): never {
    throw new NotFoundException('no such order');
  }

  /** In the RPC context the filter must change nothing: the RheoError is a failure, retried, then dead-lettered. */
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 10, maxAttempts: 2, retry: { initialMs: 0, maxMs: 0 } })
  onOrder(@Payload() order: JsonValue, @Ctx() ctx: RheoContext) {
    consumed.push(ctx.attempt);
    void order;
    throw new RheoError('invalid_argument', 'order has no amount', { field: 'amount' });
  }
}

type Registration = 'useGlobalFilters(new RheoHttpExceptionFilter())' | 'APP_FILTER';

async function boot(registration: Registration): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders' }], maxPayloadBytes: 64 })],
    controllers: [EventsController],
    providers: registration === 'APP_FILTER' ? [{ provide: APP_FILTER, useClass: RheoHttpExceptionFilter }] : [],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  if (registration !== 'APP_FILTER') app.useGlobalFilters(new RheoHttpExceptionFilter());
  app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
  await app.init();
  await app.startAllMicroservices();
  return app;
}

describe.each<Registration>(['useGlobalFilters(new RheoHttpExceptionFilter())', 'APP_FILTER'])(
  'RheoHttpExceptionFilter registered with %s',
  (registration) => {
    let app: INestApplication;

    beforeAll(async () => {
      consumed.length = 0;
      app = await boot(registration);
    });

    afterAll(async () => {
      await app.close();
    });

    it.each(RHEO_ERROR_CODES.filter((c) => STATUS[c] < 500))('answers %s with its 4xx status, the code and the message', async (code) => {
      const res = await request(app.getHttpServer()).get(`/codes/${code}`);
      expect(res.status).toBe(STATUS[code]);
      expect(res.body).toEqual(
        code === 'invalid_argument'
          ? { statusCode: 400, error: 'invalid_argument', message: 'secret detail of invalid_argument', field: 'amount' }
          : { statusCode: STATUS[code], error: code, message: `secret detail of ${code}` },
      );
    });

    it.each(RHEO_ERROR_CODES.filter((c) => STATUS[c] >= 500))(
      'answers %s with its 5xx status and the code, without the internal message',
      async (code) => {
        const res = await request(app.getHttpServer()).get(`/codes/${code}`);
        expect(res.status).toBe(STATUS[code]);
        expect(res.body).toEqual({ statusCode: STATUS[code], error: code, message: expect.any(String) });
        expect(res.body.message).not.toContain('secret');
      },
    );

    it('maps the errors the library itself throws', async () => {
      const server = app.getHttpServer();
      expect((await request(server).get('/lag/nowhere/billing')).body).toEqual({
        statusCode: 404,
        error: 'stream_not_found',
        message: 'stream "nowhere" does not exist',
      });
      const notFound = await request(server).get('/lag/orders/nobody');
      expect(notFound.status).toBe(404);
      expect(notFound.body.error).toBe('group_not_found');
      const tooLarge = await request(server)
        .post('/events/orders')
        .send({ note: 'x'.repeat(100) });
      expect(tooLarge.status).toBe(413);
      expect(tooLarge.body).toMatchObject({ statusCode: 413, error: 'payload_too_large', field: 'event.payload' });
      const unconfirmed = await request(server).post('/reset');
      expect(unconfirmed.status).toBe(428);
      expect(unconfirmed.body).toMatchObject({ statusCode: 428, error: 'confirm_required', field: 'confirm' });
    });

    it("leaves other exceptions to Nest's handling", async () => {
      const server = app.getHttpServer();
      const boom = await request(server).get('/boom');
      expect(boom.status).toBe(500);
      expect(boom.body).toEqual({ statusCode: 500, message: 'Internal server error' });
      const missing = await request(server).get('/missing');
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ statusCode: 404, message: 'no such order', error: 'Not Found' });
    });

    it('changes nothing for a consumer: a RheoError thrown there is retried and dead-lettered with its message', async () => {
      const client = app.get(RheoClient);
      const e = await client.append('orders', { payload: { id: 1 } });
      await until('orders settled', async () => (await client.lag('orders', 'billing')).lag === 0);
      expect(consumed).toEqual([1, 2]);
      expect(await client.deadLetters('orders', 'billing')).toEqual([
        expect.objectContaining({ eventId: e.id, attempt: 2, reason: 'order has no amount' }),
      ]);
    });
  },
);
