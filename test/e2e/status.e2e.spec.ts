import { Controller, type INestApplication } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type Backend,
  memoryBackend,
  RheoClient,
  RheoConsumer,
  RheoError,
  RheoHealthIndicator,
  RheoModule,
  RheoServer,
  type JsonValue,
} from '../../lib';
import { startHybrid } from './support';
import { until } from '../support/until';

/** Fault injection on the real memory backend: fetches fail while `down` is set. */
function flakyFetches(backend: Backend, fault: { down: boolean }): Backend {
  return new Proxy(backend, {
    get(target, prop, receiver) {
      if (prop === 'fetch') {
        return async (...args: Parameters<Backend['fetch']>) => {
          if (fault.down) throw new RheoError('backend_unavailable', 'connection refused (injected)');
          return target.fetch(...args);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const handled: JsonValue[] = [];

@Controller()
class TicksController {
  @RheoConsumer({ stream: 'ticks', group: 'g', pollMs: 10 })
  onTick(@Payload() p: JsonValue) {
    handled.push(p);
  }
}

describe('RheoServer status and events during a backend outage', () => {
  const fault = { down: false };
  let app: INestApplication;

  beforeAll(async () => {
    app = await startHybrid({
      imports: [RheoModule.forRoot({ backend: flakyFetches(memoryBackend(), fault), streams: [{ name: 'ticks' }] })],
      controllers: [TicksController],
    });
  });

  afterAll(async () => {
    await app.close();
  });

  it('reports reconnecting and an unhealthy consumer while fetches fail, then connected after recovery, losing nothing', async () => {
    const server = app.get(RheoServer);
    const statuses: string[] = [];
    const events: string[] = [];
    server.status.subscribe((s) => statuses.push(s));
    server.on('fetch_error', (ref, error) => events.push(`fetch_error:${ref.group}:${error.code}`));
    server.on('recovered', (ref) => events.push(`recovered:${ref.group}`));
    const client = app.get(RheoClient);
    const health = app.get(RheoHealthIndicator);

    fault.down = true;
    await client.append('ticks', { payload: { n: 1 } });
    await until('backing off', () => server.consumers()[0].state === 'backing_off');
    expect(statuses).toEqual(['connected', 'reconnecting']);
    expect(events[0]).toBe('fetch_error:g:backend_unavailable');
    const down = await health.isHealthy('rheo');
    expect(down.rheo).toMatchObject({ status: 'down', failing: ['ticks/g: consumer backing off: connection refused (injected)'] });

    fault.down = false;
    await until('consumed after recovery', () => handled.length === 1);
    await until('connected again', () => statuses[statuses.length - 1] === 'connected');
    expect(events).toContain('recovered:g');
    expect((await health.isHealthy('rheo')).rheo.status).toBe('up');
    // The ack follows the handler asynchronously (batched settles).
    await until('acked', async () => (await client.lag('ticks', 'g')).lag === 0);
    expect(handled).toEqual([{ n: 1 }]);
  });
});
