import { Controller } from '@nestjs/common';
import { Ctx, Payload } from '@nestjs/microservices';
import { RheoConsumer, RheoContext } from '../lib';
import { MARKET_EVENTS, type MarketEvent } from './market';
import { StatsService } from './stats.service';

/** Keeps a running exposure per instrument. */
@Controller()
export class RiskController {
  constructor(private readonly stats: StatsService) {}

  @RheoConsumer({ stream: MARKET_EVENTS, group: 'risk', maxDemand: 20, concurrency: 4, pollMs: 50 })
  async onMarketEvent(@Payload() event: MarketEvent, @Ctx() ctx: RheoContext) {
    if (ctx.attempt > 1) this.stats.redeliveries.push(`risk:${ctx.event.id}:${ctx.attempt}`);
    if (ctx.event.type === 'trade') {
      this.stats.exposure.set(event.instrument, (this.stats.exposure.get(event.instrument) ?? 0) + event.qty * event.price);
    }
    await new Promise((r) => setTimeout(r, 2)); // pretend to price something
    this.stats.handled.risk++;
  }
}
