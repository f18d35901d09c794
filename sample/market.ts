/** The stream the sample's market events go to. */
export const MARKET_EVENTS = 'market-events';

/** A trade or a curve update on one instrument; the instrument is the partition key. */
export type MarketEvent = {
  instrument: string;
  price: number;
  qty: number;
};

/** What POST /events accepts. */
export interface MarketEventInput {
  type: 'trade' | 'curve_update';
  payload: MarketEvent;
}
