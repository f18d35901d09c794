import { Injectable } from '@nestjs/common';

/** What the consumers did, for the demo's output and the sample's tests. */
@Injectable()
export class StatsService {
  readonly handled: Record<string, number> = { risk: 0, surveillance: 0 };
  readonly exposure = new Map<string, number>();
  readonly alerts: string[] = [];
  /** Deliveries seen with attempt > 1: `group:eventId:attempt`. */
  readonly redeliveries: string[] = [];
}
