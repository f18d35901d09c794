import type { OnModuleInit } from '@nestjs/common';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { DEFAULT_RHEO_INSTANCE } from './constants';
import { RHEO_EVENT_LISTENER_METADATA, type RheoEventListenerMarker } from './on-rheo-event.decorator';
import type { RheoEventConsumer, RheoEventName } from './rheo-events';
import type { RheoServer } from './rheo-server';

/**
 * Finds the `@OnRheoEvent` methods meant for one instance and wires them to that
 * instance's server (one explorer per instance, so instances never see each
 * other's events). Runs at module init, once every singleton exists; an app that
 * starts its microservices before `app.init()` misses the events that came first.
 */
export class RheoEventExplorer implements OnModuleInit {
  private wired = false;

  constructor(
    private readonly instanceName: string,
    private readonly server: RheoServer,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    if (this.wired) return;
    this.wired = true;
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) this.wire(wrapper);
  }

  private wire(wrapper: InstanceWrapper): void {
    const instance = wrapper.instance as Record<string, unknown> | null | undefined;
    // Request-scoped and transient classes have no one instance to call; aliases would call twice.
    if (!instance || typeof instance !== 'object' || wrapper.isAlias || !wrapper.isDependencyTreeStatic()) return;
    const proto = Object.getPrototypeOf(instance) as object | null;
    if (!proto) return;
    for (const name of this.scanner.getAllMethodNames(proto)) {
      const method = instance[name];
      if (typeof method !== 'function') continue;
      const markers = Reflect.getMetadata(RHEO_EVENT_LISTENER_METADATA, method) as RheoEventListenerMarker[] | undefined;
      for (const marker of markers ?? []) {
        if ((marker.options.instance ?? DEFAULT_RHEO_INSTANCE) !== this.instanceName) continue;
        this.listen(marker, (payload) => (method as (p: unknown) => unknown).call(instance, payload));
      }
    }
  }

  private listen(marker: RheoEventListenerMarker, call: (payload: unknown) => unknown): void {
    const { stream, group } = marker.options;
    const event: RheoEventName = marker.event;
    this.server.onRheoEvent(
      event,
      (payload: RheoEventConsumer) => {
        if (stream !== undefined && payload.stream !== stream) return undefined;
        if (group !== undefined && payload.group !== group) return undefined;
        return call(payload);
      },
      `@OnRheoEvent ${marker.handlerName}`,
    );
  }
}
