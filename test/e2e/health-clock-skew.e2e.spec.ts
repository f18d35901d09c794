// A process whose clock is a minute ahead of PostgreSQL's: /health stays up (its
// leases and delays run on the store's time) and names the skew in each group's
// warnings, next to the store's own conditions.
import type { INestApplication } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import request from 'supertest';
import { postgresBackend, Rheo, RheoModule, storeClock } from '../../lib';
import { dropSchema, freshSchema, PG_URL } from '../sql/pg-helpers';
import { startHybrid } from './support';
import { healthController } from './health-controller';

const schema = freshSchema('skewhealth');

const HealthController = healthController({ groups: [{ stream: 'orders', group: 'billing' }] });

describe("/health of a process whose clock is far from the store's", () => {
  let app: INestApplication;

  beforeAll(async () => {
    const setup = new Rheo(postgresBackend({ url: PG_URL, schema }));
    await setup.createStream('orders');
    await setup.createGroup('orders', 'billing');
    await setup.close();
    const backend = postgresBackend({ url: PG_URL, schema, clock: storeClock({ now: () => Date.now() + 60_000 }) });
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend, streams: [{ name: 'orders' }] }), TerminusModule],
      controllers: [HealthController],
    });
  });

  afterAll(async () => {
    await app?.close();
    await dropSchema(schema);
  });

  it("is up and shows the skew in the group's warnings", async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.rheo.status).toBe('up');
    expect(res.body.info.rheo.groups['orders/billing'].warnings).toEqual([
      expect.stringMatching(/^this process's clock is \d+ ms ahead of the store's/),
    ]);
  });
});
