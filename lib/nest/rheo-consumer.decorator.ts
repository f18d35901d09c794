import { UseInterceptors } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { RHEO_CONSUMER_EXTRAS, RHEO_CONSUMER_METADATA, rheoTransportId } from './constants';
import type { RheoConsumerOptions } from './consumer-options';
import { rheoOutcomeInterceptor } from './thrown-error-capture';

/** What `@RheoConsumer` leaves in the handler's EventPattern extras for {@link RheoServer}. */
export interface RheoConsumerMarker {
  options: RheoConsumerOptions;
  /** `Class.method`, so startup errors can name the handler. */
  handlerName: string;
}

/**
 * Consume `group` of `stream` with this controller method. Return -> ack;
 * `throw new RheoReject(reason)` -> dead-letter now; `throw new RheoRetry(reason, { delayMs })`
 * -> retry after the delay; any other throw -> retry with the group's backoff,
 * dead-lettered after `maxAttempts`; a payload refused by a pipe (4xx
 * `HttpException`) -> dead-letter now; a guard returning false -> dead-letter now.
 *
 * Rides on `@EventPattern({ stream, group }, transportId)`, so pipes, guards,
 * interceptors and filters apply as on any microservice handler. The method
 * must be on a controller (Nest discovers transport handlers on controllers
 * only). Options are validated when the transport starts.
 */
export function RheoConsumer(options: RheoConsumerOptions): MethodDecorator {
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
    const o = (options ?? {}) as RheoConsumerOptions;
    const marker: RheoConsumerMarker = { options: o, handlerName: `${target.constructor.name}.${String(key)}` };
    EventPattern({ stream: o.stream, group: o.group }, rheoTransportId(o.instance), { [RHEO_CONSUMER_EXTRAS]: marker })(
      target,
      key,
      descriptor,
    );
    UseInterceptors(rheoOutcomeInterceptor)(target, key, descriptor);
    Reflect.defineMetadata(RHEO_CONSUMER_METADATA, marker, descriptor.value);
    return descriptor;
  };
}
