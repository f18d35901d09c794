import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { RheoError } from '../core/errors';
import { DEFAULT_RHEO_INSTANCE, RHEO_CONSUMER_METADATA } from './constants';
import type { RheoConsumerMarker } from './rheo-consumer.decorator';
import { RheoInstance } from './rheo-instance';

function markers(scanner: MetadataScanner, proto: object | null | undefined): RheoConsumerMarker[] {
  if (!proto) return [];
  const found: RheoConsumerMarker[] = [];
  for (const name of scanner.getAllMethodNames(proto)) {
    const method = (proto as Record<string, unknown>)[name];
    const marker =
      typeof method === 'function' ? (Reflect.getMetadata(RHEO_CONSUMER_METADATA, method) as RheoConsumerMarker | undefined) : undefined;
    if (marker) found.push(marker);
  }
  return found;
}

/**
 * Consumers Nest would silently never run: on a provider instead of a controller
 * (Nest binds transport handlers on controllers only), or naming an instance no
 * `RheoModule` registers. Throws one error naming every such handler.
 */
export function checkConsumerPlacement(discovery: DiscoveryService, scanner: MetadataScanner): void {
  const instances = new Set<string>();
  for (const w of discovery.getProviders()) if (w.instance instanceof RheoInstance) instances.add(w.instance.name);
  const problems: string[] = [];
  for (const w of discovery.getProviders()) {
    if (!w.instance || w.isAlias) continue;
    for (const m of markers(scanner, Object.getPrototypeOf(w.instance))) {
      problems.push(
        `${m.handlerName}: @RheoConsumer is on a provider; Nest runs transport handlers on controllers only (add the class to a module's controllers)`,
      );
    }
  }
  for (const w of discovery.getControllers()) {
    const proto = w.instance ? Object.getPrototypeOf(w.instance) : (w.metatype as { prototype?: object } | null)?.prototype;
    for (const m of markers(scanner, proto)) {
      const name = m.options.instance ?? DEFAULT_RHEO_INSTANCE;
      if (!instances.has(name)) {
        problems.push(
          `${m.handlerName}: @RheoConsumer names instance "${name}" but no RheoModule registers it (registered: ${[...instances].join(', ') || 'none'})`,
        );
      }
    }
  }
  if (problems.length > 0) throw new RheoError('invalid_argument', problems.join('\n'));
}

/** The `@RheoConsumer` handlers on controllers that belong to instance `name`, in discovery order. */
export function consumersOf(discovery: DiscoveryService, scanner: MetadataScanner, name: string): RheoConsumerMarker[] {
  const found: RheoConsumerMarker[] = [];
  for (const w of discovery.getControllers()) {
    const proto = w.instance ? Object.getPrototypeOf(w.instance) : (w.metatype as { prototype?: object } | null)?.prototype;
    for (const m of markers(scanner, proto)) if ((m.options.instance ?? DEFAULT_RHEO_INSTANCE) === name) found.push(m);
  }
  return found;
}
