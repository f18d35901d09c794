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
