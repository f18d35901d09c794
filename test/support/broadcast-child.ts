// One instance of a Nest app with a broadcast consumer, for the multi-process
// broadcast tests (broadcast-suite.ts): the backend comes from the environment
// (backend-from-env.ts), the consumer's settings from RHEO_TEST_BROADCAST. It
// reports over IPC the group it joined as, then every event it handles; on
// { type: 'stop' } it closes the app (drain, then leave) and says goodbye.
// A payload { reject: true } is dead-lettered, { hang: true } never finishes
// (its lease stays live until the process ends), so the groups the tests delete
// hold dead letters and deliveries in flight.
//   node -r ts-node/register/transpile-only test/support/broadcast-child.ts
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, Payload } from '@nestjs/microservices';
import { RheoConsumer, RheoContext, RheoModule, RheoReject, RheoServer } from '../../lib';
import { backendFromEnv } from './backend-from-env';

/** The child's settings, passed as JSON in RHEO_TEST_BROADCAST. */
export interface BroadcastChildConfig {
  stream: string;
  group: string;
  ttlMs: number;
}

/** What a child reports. */
export type BroadcastChildMessage = { k: 'ready'; group: string } | { k: 'got'; id: string } | { k: 'bye' };

const config = JSON.parse(process.env.RHEO_TEST_BROADCAST ?? '{}') as BroadcastChildConfig;
const report = (m: BroadcastChildMessage) => process.send?.(m);

@Controller()
class CacheController {
  @RheoConsumer({
    stream: config.stream,
    group: config.group,
    broadcast: true,
    broadcastTtlMs: config.ttlMs,
    maxAttempts: 1,
    concurrency: 4,
    leaseMs: 5000,
    pollMs: 50,
  })
  async onEvent(@Payload() payload: { reject?: boolean; hang?: boolean }, @Ctx() ctx: RheoContext) {
    report({ k: 'got', id: ctx.event.id });
    if (payload?.reject) throw new RheoReject('rejected by the test');
    if (payload?.hang) await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
  }
}

@Module({
  imports: [RheoModule.forRoot({ backend: backendFromEnv(), drainTimeoutMs: 300, trimIntervalMs: 0 })],
  controllers: [CacheController],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createMicroservice(AppModule, {
    inject: [RheoServer],
    useFactory: (strategy: RheoServer) => ({ strategy }),
    logger: ['error'],
  });
  await app.listen();
  const server = app.get(RheoServer);
  const group = server.consumers()[0].group;
  process.on('message', (m: { type?: string }) => {
    if (m?.type !== 'stop') return;
    void app.close().then(() => process.send?.({ k: 'bye' }, () => process.exit(0)));
  });
  report({ k: 'ready', group });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
