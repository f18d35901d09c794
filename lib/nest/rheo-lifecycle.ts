import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { RheoInstance } from './rheo-instance';
import type { RheoServer } from './rheo-server';

/**
 * The instance's lifecycle: declared streams on init; on shutdown, the transport
 * drains first and only then the backend closes. `onApplicationShutdown` runs
 * after Nest closed the microservices in every shutdown path (app.close(),
 * SIGTERM with enableShutdownHooks, hybrid or standalone), and closing the
 * server here again is a no-op that also covers a server that was never connected.
 */
export class RheoLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    private readonly instance: RheoInstance,
    private readonly server: RheoServer,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.instance.ensureStreams();
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.server.close();
    } finally {
      await this.instance.rheo.close();
    }
  }
}
