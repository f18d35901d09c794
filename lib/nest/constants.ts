/** The name of the instance `RheoModule.forRoot` registers when none is given. */
export const DEFAULT_RHEO_INSTANCE = 'default';

/** Method metadata `@RheoConsumer` sets, so the module can find consumers Nest would never run. */
export const RHEO_CONSUMER_METADATA = 'nestjs-rheo:consumer';

/** Metadata key under which `@RheoConsumer` stores its options (in the EventPattern extras). */
export const RHEO_CONSUMER_EXTRAS = 'rheoConsumer';

/**
 * The `transportId` of the {@link RheoServer} of instance `name`. `Symbol.for` so
 * that two copies of the package in one app still agree on the id.
 */
export function rheoTransportId(name: string = DEFAULT_RHEO_INSTANCE): symbol {
  return Symbol.for(`nestjs-rheo:transport:${name}`);
}

/** Injection token of the core `Rheo` facade of instance `name`. */
export function getRheoToken(name: string = DEFAULT_RHEO_INSTANCE): string {
  return `RheoCore_${name}`;
}

/** Injection token of the {@link RheoClient} of instance `name`. */
export function getRheoClientToken(name: string = DEFAULT_RHEO_INSTANCE): string {
  return `RheoClient_${name}`;
}

/** Injection token of the {@link RheoServer} (transport strategy) of instance `name`. */
export function getRheoServerToken(name: string = DEFAULT_RHEO_INSTANCE): string {
  return `RheoServer_${name}`;
}

/** Injection token of the {@link RheoHealthIndicator} of instance `name`. */
export function getRheoHealthIndicatorToken(name: string = DEFAULT_RHEO_INSTANCE): string {
  return `RheoHealthIndicator_${name}`;
}

/** Injection token of the resolved module options of instance `name`. */
export function getRheoOptionsToken(name: string = DEFAULT_RHEO_INSTANCE): string {
  return `RheoModuleOptions_${name}`;
}

/** Injection token of the internal per-instance state (core facade + options + stream setup). */
export function getRheoInstanceToken(name: string = DEFAULT_RHEO_INSTANCE): string {
  return `RheoInstance_${name}`;
}
