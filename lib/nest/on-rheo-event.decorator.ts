import { RheoError } from '../core/errors';
import { checkKeys, checkName, keySet } from '../core/validate';
import { RHEO_EVENT_NAMES, type RheoEventName } from './rheo-events';

/** Method metadata `@OnRheoEvent` sets: one entry per decorator on the method. */
export const RHEO_EVENT_LISTENER_METADATA = 'nestjs-rheo:event-listener';

/** Which events of which instance an `@OnRheoEvent` method receives. */
export interface OnRheoEventOptions {
  /** Only events of this stream. Default: every stream. */
  stream?: string;
  /** Only events of this consumer group. Default: every group. */
  group?: string;
  /** The RheoModule instance whose consumers are listened to. Default `'default'`. */
  instance?: string;
}

/** What `@OnRheoEvent` records on a method, for the module's explorer. */
export interface RheoEventListenerMarker {
  event: RheoEventName;
  options: OnRheoEventOptions;
  /** `Class.method`, so a listener that throws is named in the log. */
  handlerName: string;
}

const OPTION_KEYS = keySet('an @OnRheoEvent option', ['stream', 'group', 'instance']);

function checkOptions(options: unknown): OnRheoEventOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw RheoError.invalid('options', 'must be an object { stream?, group?, instance? }');
  const o = options as Record<string, unknown>;
  checkKeys('', o, OPTION_KEYS);
  const checked: OnRheoEventOptions = {};
  if (o.stream !== undefined) checked.stream = checkName('stream', o.stream);
  if (o.group !== undefined) checked.group = checkName('group', o.group);
  if (o.instance !== undefined) checked.instance = checkName('instance', o.instance);
  return checked;
}

/**
 * Call this provider (or controller) method on a runtime event of the instance's
 * consumers, in the spirit of @nestjs/bullmq's `@OnWorkerEvent`:
 *
 * ```ts
 * @OnRheoEvent('dead_letter', { stream: 'orders' })
 * alert(e: RheoEventMap['dead_letter']) { ... }
 * ```
 *
 * The method receives one payload (see {@link RheoEventMap}); what it returns
 * is ignored, and what it throws (or rejects with) is logged without touching
 * consumption. Methods are wired when the module initialises, on singleton
 * providers; several decorators may sit on one method. Bad arguments throw a
 * RheoError naming the field, when the class is declared.
 */
export function OnRheoEvent(event: RheoEventName, options?: OnRheoEventOptions): MethodDecorator {
  if (!(RHEO_EVENT_NAMES as readonly unknown[]).includes(event))
    throw RheoError.invalid('event', `must be one of ${RHEO_EVENT_NAMES.join(', ')} (got ${JSON.stringify(event)})`);
  const checked = checkOptions(options);
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
    const marker: RheoEventListenerMarker = { event, options: checked, handlerName: `${target.constructor.name}.${String(key)}` };
    const existing = (Reflect.getMetadata(RHEO_EVENT_LISTENER_METADATA, descriptor.value) as RheoEventListenerMarker[] | undefined) ?? [];
    Reflect.defineMetadata(RHEO_EVENT_LISTENER_METADATA, [...existing, marker], descriptor.value);
    return descriptor;
  };
}
