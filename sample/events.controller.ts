import { Body, Controller, Get, Post } from '@nestjs/common';
import { RheoClient } from '../lib';
import { MARKET_EVENTS, type MarketEventInput } from './market';

/** The producer side: events come in over HTTP and are appended to the log. */
@Controller('events')
export class EventsController {
  constructor(private readonly rheo: RheoClient) {}

  @Post()
  async append(@Body() input: MarketEventInput) {
    const event = await this.rheo.append(MARKET_EVENTS, { type: input.type, key: input.payload?.instrument, payload: input.payload });
    return { id: event.id, partition: event.partition, sequence: event.sequence };
  }

  @Post('batch')
  async appendBatch(@Body() inputs: MarketEventInput[]) {
    const events = await this.rheo.appendBatch(
      MARKET_EVENTS,
      inputs.map((input) => ({ type: input.type, key: input.payload?.instrument, payload: input.payload })),
    );
    return { appended: events.length };
  }

  @Get('lag')
  async lag() {
    const [risk, surveillance] = await Promise.all([this.rheo.lag(MARKET_EVENTS, 'risk'), this.rheo.lag(MARKET_EVENTS, 'surveillance')]);
    return { risk: risk.lag, surveillance: surveillance.lag };
  }
}
