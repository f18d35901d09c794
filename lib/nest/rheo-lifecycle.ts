import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { DEFAULT_RHEO_INSTANCE } from './constants';
import { checkConsumerPlacement, consumersOf } from './consumer-discovery';
import { consumerLabel } from './consumer-log';
import type { RheoConsumerMarker } from './rheo-consumer.decorator';
import type { RheoInstance } from './rheo-instance';
import type { RheoServer } from './rheo-server';

/**
 * How long after the application's bootstrap consumers may wait for their transport
 * before the forgotten start is logged. main.ts starts it right after `app.listen()`,
 * so this only has to outlast what an app does in between.
 */
export const TRANSPORT_START_GRACE_MS = 10_000;

/**
 * The instance's lifecycle: declared streams on init; on shutdown, the transport
 * drains first and only then the backend closes. `onApplicationShutdown` runs
 * after Nest closed the microservices in every shutdown path (app.close(),
 * SIGTERM with enableShutdownHooks, hybrid or standalone), and closing the
 * server here again is a no-op that also covers a server that was never connected.
 */
export class RheoLifecycle implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private startCheck?: ReturnType<typeof setTimeout>;

  constructor(
    private readonly instance: RheoInstance,
    private readonly server: RheoServer,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.instance.ensureStreams();
  }

  /**
   * Fail the boot on consumers Nest would silently never run (on a provider, or
   * naming an unknown instance); and, since nothing fails when the transport is
   * never started, say so once if it still is not a while later.
   */
  onApplicationBootstrap(): void {
    checkConsumerPlacement(this.discovery, this.scanner);
    const consumers = consumersOf(this.discovery, this.scanner, this.instance.name);
    if (consumers.length === 0 || this.server.transportState === 'started') return;
    this.startCheck = setTimeout(() => this.warnIfNotStarted(consumers), TRANSPORT_START_GRACE_MS);
    // Never what keeps a process alive (a script that only appends, a test).
    this.startCheck.unref?.();
  }

  private warnIfNotStarted(consumers: RheoConsumerMarker[]): void {
    const state = this.server.transportState;
    if (state === 'started') return;
    const name = this.instance.name;
    const strategy = name === DEFAULT_RHEO_INSTANCE ? 'app.get(RheoServer)' : `app.get(getRheoServerToken('${name}'))`;
    const handlers = consumers.map((m) => consumerLabel({ handlerName: m.handlerName, stream: m.options.stream, group: m.options.group }));
    const why = state === 'bound' ? 'was connected but never started' : 'was never connected';
    new Logger('RheoModule').warn(
      `Instance "${name}": ${consumers.length} @RheoConsumer handler(s) consume nothing, ${TRANSPORT_START_GRACE_MS / 1000} s after bootstrap ` +
        `its transport ${why}: ${handlers.join(', ')}. Start it in main.ts (standalone: await app.listen()):\n` +
        `  app.connectMicroservice({ strategy: ${strategy} }, { inheritAppConfig: true });\n` +
        '  await app.startAllMicroservices();',
    );
  }

  async onApplicationShutdown(): Promise<void> {
    clearTimeout(this.startCheck);
    try {
      await this.server.close();
    } finally {
      await this.instance.rheo.close();
    }
  }
}
