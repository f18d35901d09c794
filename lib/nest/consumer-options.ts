import { RheoError } from '../core/errors';
import { checkFlowOptions } from '../core/flow';
import { MAX_NAME_LENGTH } from '../core/limits';
import type { GroupOptions } from '../core/types';
import { checkKeys, checkObject, keySet } from '../core/validate';
import type { GroupRunOptions } from '../runtime';
import { BROADCAST_SUFFIX_LENGTH } from '../runtime/broadcast';
import { checkFields, type ConsumerFields, defaultOf, fieldsOn, type FieldsOn, RUNTIME_KEYS } from '../runtime/consumer-settings';
import { resolveGroupOptions } from '../runtime/options';

// Every option is declared once, in runtime/consumer-settings.ts: its type, TSDoc,
// validator, default and where it may be set. What Nest takes is picked from there.

/** What the module's `defaults` / `consumers` may set: the per-process and the group settings. */
type SettingKey = FieldsOn<'nest', 'process' | 'group'>;

/**
 * How a consumer runs: everything but its identity (stream, group, instance) and
 * its handler's shape. The module's `defaults` and `consumers` take these; the
 * group settings among them (`maxAttempts`, `retry`, `ordering`, `start` and the
 * flow limits) apply when the group is created (and `maxAttempts`, `retry` at each start with the
 * module's `groupSettings: 'apply'`).
 */
export type RheoConsumerSettings = Pick<ConsumerFields, SettingKey>;

/** Options of `@RheoConsumer`: its identity, its settings, and what the handler is (`batch`, `transactional`, `broadcast`). */
export type RheoConsumerOptions = Pick<ConsumerFields, FieldsOn<'nest'>>;

/** A broadcast consumer's resolved settings. */
export interface ResolvedBroadcast {
  /** How long an instance's group outlives its last heartbeat, ms. */
  ttlMs: number;
}

/** A consumer's options after defaults, configuration and validation. */
export interface ResolvedConsumer {
  /** `Class.method`, for messages. */
  handlerName: string;
  /** `'stream/group'`. */
  key: string;
  run: GroupRunOptions;
  group: GroupOptions;
  /** Set for a broadcast consumer (`run.group` is then its instance's group once the transport joined it). */
  broadcast?: ResolvedBroadcast;
  /** Where each setting not taken from the decorator came from (`'defaults'`, `'consumers["stream/group"]'`), for errors. */
  sources: SettingSources;
}

/** Per setting, the module option it was taken from; absent when it came from the decorator (or the built-in default). */
export type SettingSources = Partial<Record<SettingKey, string>>;

const SETTINGS = fieldsOn('nest', ['process', 'group']);
const GROUP_SETTINGS = fieldsOn('nest', ['group']);
/** What only the decorator sets: what the handler is (batch, transactional: its signature; broadcast: where its group lives). */
const HANDLER_SHAPE = fieldsOn('nest', ['handler']);
const DECORATOR = fieldsOn('nest');

/** What configuration may set, and what the decorator may (identity and the handler's shape too). */
const SETTING_KEYS = keySet('a consumer option', SETTINGS);
const DECORATOR_KEYS = keySet('a consumer option', DECORATOR);

/** The key a consumer's configuration is found under in `RheoModuleOptions.consumers`. */
export function consumerKey(stream: string, group: string): string {
  return `${stream}/${group}`;
}

/**
 * Reject keys that are not settings: a typo must not silently fall back to a
 * default. Configuration (`allowIdentity` false) is also refused what the
 * handler is: `batch`, `transactional` and `broadcast` are the decorator's.
 */
export function checkSettings(field: string, value: unknown, allowIdentity = false): RheoConsumerSettings {
  const o = checkObject(field, value);
  if (!allowIdentity) {
    for (const k of HANDLER_SHAPE)
      if (Object.prototype.hasOwnProperty.call(o, k))
        throw RheoError.invalid(
          `${field}.${k}`,
          `is set on @RheoConsumer only: it changes what the handler receives or where its group lives (use ${SETTING_KEYS.list})`,
        );
  }
  checkKeys(field, o, allowIdentity ? DECORATOR_KEYS : SETTING_KEYS);
  return o as RheoConsumerSettings;
}

function pick(o: RheoConsumerSettings): RheoConsumerSettings {
  const out: Record<string, unknown> = {};
  for (const k of SETTINGS) if (o[k] !== undefined) out[k] = o[k];
  return out as RheoConsumerSettings;
}

/**
 * The broadcast rules that tie fields together (docs/adr/031); each field itself
 * is checked by its declaration. The module's `defaults` apply to every consumer,
 * so their `start` and `broadcastTtlMs` are ignored where they do not fit (a
 * broadcast consumer always starts at the end; an ordinary one has no ttl); the
 * same values set for this consumer (on the decorator or in
 * `consumers["stream/group"]`) are refused instead, naming the field. Returns
 * undefined for an ordinary consumer.
 */
function checkBroadcast(
  options: RheoConsumerOptions,
  group: string,
  merged: RheoConsumerSettings,
  sources: SettingSources,
): ResolvedBroadcast | undefined {
  const own = (k: SettingKey) => merged[k] !== undefined && sources[k] !== 'defaults';
  if (!checkFields(options, ['broadcast']).broadcast) {
    if (own('broadcastTtlMs')) throw RheoError.invalid('broadcastTtlMs', 'applies to broadcast consumers only (broadcast: true)');
    return undefined;
  }
  // Each instance consumes a group of its own: a group-wide limit would hold per instance, not across them.
  for (const k of GROUP_WIDE_LIMITS)
    if (own(k))
      throw RheoError.invalid(
        k,
        "cannot be set on a broadcast consumer: each instance consumes a group of its own, so the limit would hold per instance, not across instances (use concurrency for each instance's own limit)",
      );
  if (merged.start !== 'end' && own('start'))
    throw RheoError.invalid(
      'start',
      "must be 'end' or absent for a broadcast consumer: each instance's group starts at the end of the stream",
    );
  if (group.length + BROADCAST_SUFFIX_LENGTH > MAX_NAME_LENGTH)
    throw RheoError.invalid(
      'group',
      `must be at most ${MAX_NAME_LENGTH - BROADCAST_SUFFIX_LENGTH} characters for a broadcast consumer (each instance adds .<instance id>)`,
    );
  const ttlMs = checkFields(merged, ['broadcastTtlMs']).broadcastTtlMs ?? defaultOf('broadcastTtlMs');
  return { ttlMs: ttlMs as number };
}

/** The runtime's options of this consumer: every field the runtime takes, from wherever Nest got it (`drainTimeoutMs`: the module). */
function runOptions(given: Record<string, unknown>): GroupRunOptions {
  const run: Record<string, unknown> = {};
  for (const k of RUNTIME_KEYS) if (given[k] !== undefined) run[k] = given[k];
  return run as unknown as GroupRunOptions;
}

/** The flow limits that hold across every process of a group (docs/adr/049-flow-control.md): not for broadcast groups. */
const GROUP_WIDE_LIMITS = ['groupConcurrency', 'rateLimit'] as const;

/** Settings whose names cannot be mistaken for ordinary words in a message. */
const CAMEL_CASE_SETTINGS = SETTINGS.filter((k) => /[A-Z]/.test(k));

/**
 * The same error, blaming the module option a value came from: a bad
 * `consumers["orders/billing"].maxDemand` must not read as if the decorator said
 * it. The field becomes `consumers["orders/billing"].maxDemand` (or
 * `defaults.maxDemand`); a configured setting the problem names (`pollMs must be
 * less than leaseMs`) is qualified too. Errors about a decorator value are
 * returned unchanged.
 */
export function blameSource(sources: SettingSources, err: unknown): unknown {
  if (!(err instanceof RheoError) || err.field === undefined) return err;
  const root = /^[A-Za-z]+/.exec(err.field)?.[0] as keyof RheoConsumerSettings | undefined;
  const source = root === undefined ? undefined : sources[root];
  const field = source === undefined ? err.field : `${source}.${err.field}`;
  const head = err.message.startsWith(err.field) ? err.field : '';
  let rest = err.message.slice(head.length);
  for (const k of CAMEL_CASE_SETTINGS) {
    const other = sources[k];
    if (k !== root && other !== undefined) rest = rest.replace(new RegExp(`(?<![\\w.\\]"])${k}(?!\\w)`, 'g'), `${other}.${k}`);
  }
  const message = (head === '' ? '' : field) + rest;
  if (message === err.message && field === err.field) return err;
  return new RheoError(err.code, message, { field, cause: err });
}

/**
 * Resolve one consumer: built-in defaults < module `defaults` < decorator options <
 * module `consumers['stream/group']`. Every error names the handler
 * (`RiskController.onCurve: maxDemand must be >= 1`) and, for a value from the
 * module options, where it came from (`consumers["market-events/risk"].maxDemand`,
 * `defaults.maxDemand`); nothing has been touched yet.
 */
export function resolveConsumer(
  handlerName: string,
  decorated: RheoConsumerOptions,
  moduleOptions: { defaults?: RheoConsumerSettings; consumers?: Record<string, RheoConsumerSettings>; drainTimeoutMs?: number },
): ResolvedConsumer {
  try {
    const options = checkSettings('options', decorated, true) as RheoConsumerOptions;
    const { stream, group } = checkFields(options, ['stream', 'group']) as { stream: string; group: string };
    const key = consumerKey(stream, group);
    const own = pick(options);
    const defaults = moduleOptions.defaults === undefined ? {} : pick(checkSettings('defaults', moduleOptions.defaults));
    const configured = moduleOptions.consumers?.[key];
    const overrideSource = `consumers["${key}"]`;
    const override = configured === undefined ? {} : pick(checkSettings(overrideSource, configured));
    const merged: RheoConsumerSettings = { ...defaults, ...own, ...override };
    const sources: SettingSources = {};
    for (const k of SETTINGS) {
      if (override[k] !== undefined) sources[k] = overrideSource;
      else if (own[k] === undefined && defaults[k] !== undefined) sources[k] = 'defaults';
    }
    try {
      const run = runOptions({ ...options, ...merged, stream, group, drainTimeoutMs: moduleOptions.drainTimeoutMs });
      resolveGroupOptions(run);
      const broadcast = checkBroadcast(options, group, merged, sources);
      // A broadcast group always starts at the end, and has no group-wide limits (from the module's defaults, they do not apply to it).
      const settings = broadcast ? { ...merged, start: 'end' as const, groupConcurrency: undefined, rateLimit: undefined } : merged;
      const groupOptions: GroupOptions = { ifNotExists: true, ...checkFields(settings, GROUP_SETTINGS) };
      // The limits against the ordering, as createGroup will check them: refused before anything is created.
      checkFlowOptions(groupOptions, groupOptions.ordering ?? 'none');
      return { handlerName, key, run, group: groupOptions, sources, ...(broadcast && { broadcast }) };
    } catch (err) {
      throw blameSource(sources, err);
    }
  } catch (err) {
    throw prefixed(handlerName, err);
  }
}

/** The same error, its message prefixed with the handler it is about. */
export function prefixed(handlerName: string, err: unknown): RheoError {
  if (err instanceof RheoError) {
    const e = new RheoError(err.code, `${handlerName}: ${err.message}`, { field: err.field, cause: err });
    return e;
  }
  const message = err instanceof Error ? err.message : String(err);
  return new RheoError('failed', `${handlerName}: ${message}`, { cause: err });
}
