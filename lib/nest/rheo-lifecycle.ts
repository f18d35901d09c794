import type { OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { checkConsumerPlacement } from './consumer-discovery';
import type { RheoInstance } from './rheo-instance';
import type { RheoServer } from './rheo-server';

/**
 * The instance's lifecycle: declared streams on init; on shutdown, the transport
 * drains first and only then the backend closes. `onApplicationShutdown` runs
 * after Nest closed the microservices in every shutdown path (app.close(),
 * SIGTERM with enableShutdownHooks, hybrid or standalone), and closing the
 * server here again is a no-op that also covers a server that was never connected.
 */
export class RheoLifecycle implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly instance: RheoInstance,
    private readonly server: RheoServer,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.instance.ensureStreams();
  }

  /** Fail the boot on consumers Nest would silently never run (on a provider, or naming an unknown instance). */
  onApplicationBootstrap(): void {
    checkConsumerPlacement(this.discovery, this.scanner);
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await this.server.close();
    } finally {
      await this.instance.rheo.close();
    }
  }
}
