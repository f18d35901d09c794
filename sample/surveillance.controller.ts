import { Controller } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { RheoConsumer, RheoContext, RheoReject } from '../lib';
import { MARKET_EVENTS, type MarketEvent } from './market';
import { StatsService } from './stats.service';

/** Flags large trades; a trade with a non-positive price can never be checked and is dead-lettered. */
@Controller()
export class SurveillanceController {
  constructor(private readonly stats: StatsService) {}

  @RheoConsumer({ stream: MARKET_EVENTS, group: 'surveillance', maxDemand: 10, concurrency: 2, pollMs: 50, leaseMs: 5000 })
  onMarketEvent(@Payload() event: MarketEvent, @Ctx() ctx: RheoContext) {
    if (ctx.attempt > 1) this.stats.redeliveries.push(`surveillance:${ctx.event.id}:${ctx.attempt}`);
    if (event.price <= 0) throw new RheoReject(`price must be positive, got ${event.price}`);
    if (event.qty * event.price > 900_000) this.stats.alerts.push(`${event.instrument} ${event.qty}@${event.price}`);
    this.stats.handled.surveillance++;
  }
}
