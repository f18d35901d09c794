import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { Backend } from '../backends/backend';
import type { Retention } from '../core/types';
import type { RheoConsumerSettings } from './consumer-options';
import type { GroupSettingsMode } from './declared-group';
import type { RheoMetricsOptions } from './metrics/options';

/** A stream the module creates at startup when it is missing. */
export interface RheoStreamDeclaration {
  name: string;
  /** Partition count when the stream is created. Default 1. An existing stream keeps its own. */
  partitions?: number;
  /**
   * How long the stream keeps its events and dead letters. Applied when the stream
   * is created, and to an existing stream at startup when it differs (configuration
   * wins); leave it out to keep an existing stream's retention as it is. The
   * transport's background trim enforces it (see `trimIntervalMs`).
   */
  retention?: Retention;
}

/** Options of one nestjs-rheo instance (what `forRoot` takes, or what `forRootAsync`'s factory returns). */
export interface RheoModuleOptions {
  /** The store. The module closes it on application shutdown, after the transport drained. */
  backend: Backend;
  /** Streams created at startup if missing. Streams named by consumers must exist or be declared here. */
  streams?: RheoStreamDeclaration[];
  /** Settings (per-process options and group settings) applied to every consumer of this instance; a consumer's own options win. */
  defaults?: RheoConsumerSettings;
  /**
   * Per-consumer settings keyed by `'stream/group'`, typically read from configuration.
   * They win over the decorator's literals (configuration overrides code). See docs/adr/010.
   */
  consumers?: Record<string, RheoConsumerSettings>;
  /** Largest accepted payload, as JSON bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Largest accepted metadata of one event, as JSON bytes. Default 64 KiB. */
  maxMetadataBytes?: number;
  /** Largest appendBatch call: its payloads' and metadata's JSON bytes together. Default 16 MiB. */
  maxBatchBytes?: number;
  /** How long `RheoServer.close()` waits for running handlers, ms. Default 10000. */
  drainTimeoutMs?: number;
  /**
   * How often the transport applies stream retentions, ms: trims what every group
   * has finished and purges old dead letters. One process of all those sharing the
   * store does it at a time. Default 60000; 0 turns the background trim off
   * (`Rheo#trim` and `purgeDeadLetters` still work on demand).
   */
  trimIntervalMs?: number;
  /**
   * What startup does with a consumer's group that exists already and whose stored
   * settings (`maxAttempts`, `retry`, the flow limits) differ from the consumer's
   * declared options. `'create'` (the default): they apply only when a group is
   * created; the transport warns of each difference. `'apply'`: the stored group is
   * changed in place to match (`Rheo#updateGroup`), each change logged. `ordering`
   * cannot change in place, nor can a `keyConcurrency` be added: those only warn
   * either way. See docs/consumers.md.
   */
  groupSettings?: GroupSettingsMode;
  /**
   * Prometheus metrics through prom-client (an optional peer: `npm install prom-client`):
   * `true` registers them on prom-client's default registry with the prefix `rheo_`;
   * `{ registry, prefix, groups }` chooses (`groups`: which groups get gauges, the app's by default).
   * Off when absent. See docs/observability.md.
   */
  metrics?: boolean | RheoMetricsOptions;
}

/** Options of `RheoModule.forRoot` that shape the Nest module rather than the instance. */
export interface RheoModuleRegistration {
  /** Instance name, for apps with more than one store. Default `'default'`. */
  name?: string;
  /** Register the instance's providers globally. Default false. */
  isGlobal?: boolean;
}

/** Options of `RheoModule.forRootAsync`. */
export interface RheoModuleAsyncOptions extends RheoModuleRegistration, Pick<ModuleMetadata, 'imports'> {
  /** Providers to inject into `useFactory`. */
  inject?: FactoryProvider['inject'];
  /** Builds the instance options (or just the backend). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as Nest's own FactoryProvider: the injected values are the factory's to type
  useFactory: (...args: any[]) => RheoModuleOptions | Backend | Promise<RheoModuleOptions | Backend>;
}
