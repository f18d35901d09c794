import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import type { Backend } from '../backends/backend';
import { RheoError } from '../core/errors';
import { Rheo } from '../core/rheo';
import { checkBoolean, checkKeys, checkName, keySet } from '../core/validate';
import {
  DEFAULT_RHEO_INSTANCE,
  getRheoClientToken,
  getRheoHealthIndicatorToken,
  getRheoInstanceToken,
  getRheoOptionsToken,
  getRheoServerToken,
  getRheoToken,
} from './constants';
import { RheoClient } from './rheo-client';
import { RheoHealthIndicator } from './rheo-health.indicator';
import { isBackend, RheoInstance } from './rheo-instance';
import { RheoEventExplorer } from './rheo-event-explorer';
import { RheoLifecycle } from './rheo-lifecycle';
import { RheoMetrics } from './metrics';
import type { RheoModuleAsyncOptions, RheoModuleOptions, RheoModuleRegistration } from './rheo-module-options';
import { RheoServer } from './rheo-server';

const ASYNC_KEYS = keySet('a RheoModule.forRootAsync option', ['name', 'isGlobal', 'imports', 'inject', 'useFactory']);

function registration(input: unknown): Required<RheoModuleRegistration> {
  // A bare backend has a `name` of its own (`'memory'`, `'postgres'`): not an instance name.
  const r = (typeof input === 'object' && input !== null && !isBackend(input) ? input : {}) as RheoModuleRegistration;
  const name = r.name === undefined ? DEFAULT_RHEO_INSTANCE : checkName('name', r.name);
  if (r.isGlobal !== undefined) checkBoolean('isGlobal', r.isGlobal);
  return { name, isGlobal: r.isGlobal ?? false };
}

/**
 * The Nest module of one nestjs-rheo instance. Provides the core `Rheo`,
 * {@link RheoClient}, {@link RheoServer} (the transport strategy) and
 * {@link RheoHealthIndicator}; the default instance also under their classes,
 * a named one under `getRheo*Token(name)` / `@InjectRheo*(name)`.
 */
@Module({})
export class RheoModule {
  /** `forRoot(backend)` or `forRoot({ backend, streams, defaults, consumers, name, isGlobal, maxPayloadBytes, maxMetadataBytes, maxBatchBytes, drainTimeoutMs, trimIntervalMs, groupSettings, metrics })`. */
  static forRoot(options: Backend | (RheoModuleOptions & RheoModuleRegistration)): DynamicModule {
    const { name, isGlobal } = registration(options);
    return RheoModule.build(name, isGlobal, [], { provide: getRheoOptionsToken(name), useValue: options });
  }

  /** Options from a factory (e.g. `ConfigService`): `{ imports, inject, useFactory, name, isGlobal }`. */
  static forRootAsync(options: RheoModuleAsyncOptions): DynamicModule {
    const { name, isGlobal } = registration(options);
    if (typeof options?.useFactory !== 'function')
      throw RheoError.invalid('useFactory', 'must be a function returning the module options or a backend');
    checkKeys('', options, ASYNC_KEYS);
    return RheoModule.build(name, isGlobal, options.imports ?? [], {
      provide: getRheoOptionsToken(name),
      useFactory: options.useFactory,
      inject: options.inject ?? [],
    });
  }

  private static build(
    name: string,
    isGlobal: boolean,
    imports: NonNullable<DynamicModule['imports']>,
    optionsProvider: Provider,
  ): DynamicModule {
    const instance = getRheoInstanceToken(name);
    const server = getRheoServerToken(name);
    const providers: Provider[] = [
      optionsProvider,
      { provide: instance, useFactory: (o: RheoModuleOptions | Backend) => new RheoInstance(name, o), inject: [getRheoOptionsToken(name)] },
      { provide: getRheoToken(name), useFactory: (i: RheoInstance) => i.rheo, inject: [instance] },
      { provide: server, useFactory: (i: RheoInstance) => new RheoServer(i), inject: [instance] },
      {
        provide: getRheoClientToken(name),
        useFactory: (i: RheoInstance) => new RheoClient(i.rheo, name, (stream, err) => i.explainMissingStream(stream, err)),
        inject: [instance],
      },
      {
        provide: getRheoHealthIndicatorToken(name),
        useFactory: (i: RheoInstance, s: RheoServer, m: ModuleRef) => new RheoHealthIndicator(i, s, m),
        inject: [instance, server, ModuleRef],
      },
      {
        provide: `RheoEventExplorer_${name}`,
        useFactory: (s: RheoServer, d: DiscoveryService, m: MetadataScanner) => new RheoEventExplorer(name, s, d, m),
        inject: [server, DiscoveryService, MetadataScanner],
      },
      {
        provide: `RheoLifecycle_${name}`,
        useFactory: (i: RheoInstance, s: RheoServer, d: DiscoveryService, m: MetadataScanner) => new RheoLifecycle(i, s, d, m),
        inject: [instance, server, DiscoveryService, MetadataScanner],
      },
      { provide: `RheoMetrics_${name}`, useFactory: (i: RheoInstance, s: RheoServer) => new RheoMetrics(i, s), inject: [instance, server] },
    ];
    const exported: Array<string | Provider> = [getRheoToken(name), server, getRheoClientToken(name), getRheoHealthIndicatorToken(name)];
    if (name === DEFAULT_RHEO_INSTANCE) {
      const aliases: Provider[] = [
        { provide: Rheo, useExisting: getRheoToken(name) },
        { provide: RheoServer, useExisting: server },
        { provide: RheoClient, useExisting: getRheoClientToken(name) },
        { provide: RheoHealthIndicator, useExisting: getRheoHealthIndicatorToken(name) },
      ];
      providers.push(...aliases);
      exported.push(Rheo, RheoServer, RheoClient, RheoHealthIndicator);
    }
    return {
      module: RheoModule,
      global: isGlobal,
      imports: [DiscoveryModule, ...imports],
      providers,
      exports: exported as DynamicModule['exports'],
    };
  }
}
