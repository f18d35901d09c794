import { Logger } from '@nestjs/common';
import { isRheoError, RheoError, toRheoError } from '../core/errors';
import { Rheo } from '../core/rheo';
import { DEFAULT_TRIM_INTERVAL_MS, MAX_DURATION_MS } from '../core/limits';
import { jsonEqual } from '../core/json-equal';
import { checkRetention } from '../core/requests';
import type { Retention } from '../core/types';
import { checkInt, checkKeys, checkName, checkObject, keySet } from '../core/validate';
import type { Backend } from '../backends/backend';
import { backendLines } from './backend-log';
import { checkSettings } from './consumer-options';
import { GROUP_SETTINGS_MODES, type GroupSettingsMode } from './declared-group';
import type { RheoModuleOptions } from './rheo-module-options';

const STREAM_KEYS = keySet('a stream declaration option', ['name', 'partitions', 'retention']);

/** A Backend, as opposed to module options (which hold one). */
export function isBackend(value: unknown): value is Backend {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Backend).fetch === 'function' &&
    typeof (value as Backend).settle === 'function'
  );
}

/**
 * One named nestjs-rheo instance: its core facade, its options, and the one-time
 * stream setup shared by the module's init hook and the transport's `listen`
 * (whichever runs first: `startAllMicroservices()` may come before `app.init()`).
 */
export class RheoInstance {
  readonly rheo: Rheo;
  readonly options: RheoModuleOptions;
  readonly streams: Array<{ name: string; partitions: number; retention?: Retention }>;
  /** Background trim interval, ms; 0 when off. */
  readonly trimIntervalMs: number;
  /** What startup does with an existing group whose stored settings differ from the declared ones. */
  readonly groupSettings: GroupSettingsMode;
  private streamsReady?: Promise<void>;
  /** The declared streams exist: {@link ensureStreams} succeeded. */
  private streamsCreated = false;
  private announced = false;

  /** Validates the options: errors name the instance and the field. */
  constructor(
    readonly name: string,
    input: RheoModuleOptions | Backend,
  ) {
    try {
      const options = isBackend(input) ? { backend: input } : (checkObject('options', input) as unknown as RheoModuleOptions);
      if (!isBackend(options.backend)) throw RheoError.invalid('backend', 'must be a Backend (e.g. memoryBackend())');
      const known = [
        'backend',
        'streams',
        'defaults',
        'consumers',
        'maxPayloadBytes',
        'maxMetadataBytes',
        'maxBatchBytes',
        'drainTimeoutMs',
        'trimIntervalMs',
        'groupSettings',
        'metrics',
        'name',
        'isGlobal',
      ];
      checkKeys('', options, keySet('a RheoModule option', known));
      if (options.defaults !== undefined) checkSettings('defaults', options.defaults);
      if (options.consumers !== undefined) {
        for (const [key, settings] of Object.entries(checkObject('consumers', options.consumers)))
          checkSettings(`consumers["${key}"]`, settings);
      }
      if (options.drainTimeoutMs !== undefined) checkInt('drainTimeoutMs', options.drainTimeoutMs, 0, MAX_DURATION_MS);
      this.trimIntervalMs =
        options.trimIntervalMs === undefined
          ? DEFAULT_TRIM_INTERVAL_MS
          : checkInt('trimIntervalMs', options.trimIntervalMs, 0, MAX_DURATION_MS);
      this.groupSettings = options.groupSettings ?? 'create';
      if (!GROUP_SETTINGS_MODES.includes(this.groupSettings))
        throw RheoError.invalid('groupSettings', `must be ${GROUP_SETTINGS_MODES.map((m) => `'${m}'`).join(' or ')}`);
      if (options.streams !== undefined && !Array.isArray(options.streams))
        throw RheoError.invalid('streams', 'must be an array of { name, partitions, retention }');
      this.streams = (options.streams ?? []).map((s, i) => {
        checkKeys(`streams[${i}]`, checkObject(`streams[${i}]`, s), STREAM_KEYS);
        return {
          name: checkName(`streams[${i}].name`, s.name),
          partitions: s.partitions === undefined ? 1 : checkInt(`streams[${i}].partitions`, s.partitions, 1),
          retention: s.retention === undefined ? undefined : checkRetention(`streams[${i}].retention`, s.retention),
        };
      });
      this.options = options;
      this.rheo = new Rheo(options.backend, {
        maxPayloadBytes: options.maxPayloadBytes,
        maxMetadataBytes: options.maxMetadataBytes,
        maxBatchBytes: options.maxBatchBytes,
      });
    } catch (err) {
      const e = toRheoError(err);
      throw new RheoError(e.code, `RheoModule(${name}): ${e.message}`, { field: e.field, cause: err });
    }
  }

  /**
   * Log, once, the backend and where its data lives, and the tables its start-up
   * installed or upgraded. Called once the backend has started (its `init` ran).
   */
  announceBackend(): void {
    if (this.announced) return;
    this.announced = true;
    const logger = new Logger('RheoModule');
    for (const line of backendLines(this.name, this.rheo.backend)) logger.log(line);
  }

  /**
   * `err`, or for a stream this instance declares but has not created yet (a call
   * before `app.init()` on a fresh store) the same error saying when it will exist.
   */
  explainMissingStream(stream: string, err: unknown): unknown {
    if (this.streamsCreated || !isRheoError(err, 'stream_not_found') || !this.streams.some((s) => s.name === stream)) return err;
    return new RheoError(
      'stream_not_found',
      `stream "${stream}" does not exist yet: RheoModule(${this.name}) creates the streams it declares when the application initialises ` +
        '(app.init(), app.listen() or startAllMicroservices()); call this after that',
      { cause: err },
    );
  }

  /**
   * Create the declared streams that are missing, and bring a declared retention
   * to an existing stream whose retention differs. Once; retried after a failure.
   */
  ensureStreams(): Promise<void> {
    if (!this.streamsReady) {
      this.streamsReady = (async () => {
        for (const s of this.streams) {
          const info = await this.rheo.createStream(s.name, { partitions: s.partitions, retention: s.retention, ifNotExists: true });
          if (s.retention && !jsonEqual({ ...info.retention }, { ...s.retention })) await this.rheo.setRetention(s.name, s.retention);
        }
        if (this.streams.length > 0) this.announceBackend();
        this.streamsCreated = true;
      })().catch((err) => {
        this.streamsReady = undefined;
        throw err;
      });
    }
    return this.streamsReady;
  }
}
