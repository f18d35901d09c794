import { Body, Controller, type INestApplication, Post, ValidationPipe } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Type } from 'class-transformer';
import { IsDate, IsOptional, IsPositive, IsString, ValidateNested } from 'class-validator';
import request from 'supertest';
import { memoryBackend, Rheo, RheoClient, RheoModule } from '../../lib';

// What `ValidationPipe({ transform: true })` hands a controller is a DTO class
// instance, with Date fields and, for optional fields not sent, properties whose
// value is undefined (class fields are defined on the instance). Appending it
// as the payload stores what JSON makes of it, and answers with that.

class LineDto {
  @IsString()
  sku!: string;

  @IsPositive()
  quantity!: number;
}

class PlaceOrderDto {
  @IsString()
  orderId!: string;

  @Type(() => Date)
  @IsDate()
  placedAt!: Date;

  @IsOptional()
  @IsString()
  coupon?: string;

  @ValidateNested({ each: true })
  @Type(() => LineDto)
  lines!: LineDto[];
}

/** What the controller was handed: the DTO's own keys, and whether it is one. */
const handed: Array<{ instance: boolean; keys: string[] }> = [];

@Controller()
class OrdersController {
  constructor(private readonly rheo: RheoClient) {}

  @Post('orders')
  place(@Body() order: PlaceOrderDto) {
    handed.push({ instance: order instanceof PlaceOrderDto, keys: Object.keys(order) });
    return this.rheo.append('orders', { key: order.orderId, type: 'order.placed', payload: order });
  }
}

describe('appending a DTO from ValidationPipe({ transform: true })', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'orders' }] })],
      controllers: [OrdersController],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    app.useGlobalPipes(new ValidationPipe({ transform: true }));
    await app.init();
  });
  afterAll(() => app.close());

  it('stores it as JSON makes it and answers with the stored event', async () => {
    const body = { orderId: 'o-1', placedAt: '2026-05-01T12:00:00Z', lines: [{ sku: 'a-1', quantity: 2 }] };
    const res = await request(app.getHttpServer()).post('/orders').send(body);
    expect(res.status).toBe(201);
    expect(handed).toEqual([{ instance: true, keys: ['orderId', 'placedAt', 'coupon', 'lines'] }]);
    const stored = { orderId: 'o-1', placedAt: '2026-05-01T12:00:00.000Z', lines: [{ sku: 'a-1', quantity: 2 }] };
    expect(res.body).toMatchObject({ key: 'o-1', type: 'order.placed', payload: stored });
    expect(Object.keys(res.body.payload)).not.toContain('coupon');
    const [read] = await app.get(Rheo).read('orders');
    expect(read.payload).toEqual(stored);
  });
});
