import request from 'supertest';
import { RheoClient } from '../../lib';
import { MARKET_EVENTS } from '../../sample/market';
import { StatsService } from '../../sample/stats.service';
import { sampleApp } from './support';
import { until } from '../support/until';

describe('the sample app', () => {
  const app = sampleApp('sample');

  it('runs on SQLite: appends over HTTP, both groups consume every event, the poison one is dead-lettered, /health is up', async () => {
    const http = request(app().getHttpServer());
    const one = await http
      .post('/events')
      .send({ type: 'trade', payload: { instrument: 'EURUSD', price: 1.1, qty: 1000 } })
      .expect(201);
    expect(one.body).toEqual({ id: expect.any(String), partition: expect.any(Number), sequence: 1 });
    const batch = Array.from({ length: 49 }, (_, i) => ({
      type: 'trade',
      payload: { instrument: `I${i % 5}`, price: i === 7 ? 0 : 10 + i, qty: 10 },
    }));
    await http.post('/events/batch').send(batch).expect(201, { appended: 49 });
    await until('both groups caught up', async () => {
      const lag = (await http.get('/events/lag').expect(200)).body;
      return lag.risk === 0 && lag.surveillance === 0;
    });
    expect(app().get(RheoClient).unwrap().backend.name).toBe('sqlite');
    const stats = app().get(StatsService);
    expect(stats.handled).toEqual({ risk: 50, surveillance: 49 });
    const dead = await app().get(RheoClient).deadLetters(MARKET_EVENTS, 'surveillance');
    expect(dead).toEqual([expect.objectContaining({ attempt: 1, reason: 'price must be positive, got 0' })]);
    const health = await http.get('/health').expect(200);
    expect(health.body.info.rheo.groups['market-events/surveillance']).toMatchObject({ lag: 0, deadLetters: 1 });
  });
});
