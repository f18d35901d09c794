import type { INestApplication, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RheoServer } from '../lib';
import { AppModule } from './app.module';

/** Build the hybrid app (HTTP + the Rheo transport) without starting the consumers yet. */
export async function createApp(logger: LogLevel[] | false = ['error', 'warn', 'log']): Promise<INestApplication> {
  const app = await NestFactory.create(AppModule, { logger });
  app.enableShutdownHooks();
  app.connectMicroservice({ strategy: app.get(RheoServer) }, { inheritAppConfig: true });
  await app.init();
  return app;
}

/**
 * Start the app the way `main.ts` does: HTTP on `port`, then the consumers. An
 * app that cannot bind its port (EADDRINUSE) then fails before any consumer has
 * claimed a lease it would strand until the lease expires.
 */
export async function startApp(app: INestApplication, port: number): Promise<void> {
  await app.listen(port); // first: if the port is taken, no consumer has leased anything yet
  await app.startAllMicroservices();
}
