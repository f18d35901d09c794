// The options of RheoDashboardModule.forRoot, and their check: a wrong option
// fails the app's boot with a RheoError naming the field, not a dashboard that
// silently serves the wrong instance or is writable by mistake.
import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { RheoError, toRheoError } from '../../core/errors';
import { checkBoolean, checkKeys, checkName, checkObject, keySet } from '../../core/validate';
import { DEFAULT_RHEO_INSTANCE } from '../constants';

/** Options of {@link RheoDashboardModule.forRoot}. */
export interface RheoDashboardOptions {
  /** Where the page is served; the JSON API is under `<path>/api/`. Default `'/rheo'`. */
  path?: string;
  /** The RheoModule instance to show. Default: the default instance. */
  instance?: string;
  /**
   * No actions (redrive, replay, reset, pause, resume): their buttons are absent and their POSTs
   * answer 403. Default `true`: a dashboard is writable only when asked.
   */
  readOnly?: boolean;
  /**
   * A Nest guard (class or instance) run before every route of the dashboard,
   * page, assets and API alike; a refusal answers 403. A guard class is built by
   * Nest in the dashboard's module: its dependencies come from `imports` or
   * global modules.
   */
  guard?: Type<CanActivate> | CanActivate;
  /** Modules the guard's dependencies come from. */
  imports?: ModuleMetadata['imports'];
  /** Show a preview of each dead letter's payload. Default `false`: payloads may hold personal data. */
  showPayloads?: boolean;
}

/** The options once checked, defaults applied. */
export interface ResolvedDashboardOptions {
  /** `''` (the root) or `/a/b`: no trailing slash. */
  path: string;
  instance: string;
  readOnly: boolean;
  guard?: Type<CanActivate> | CanActivate;
  imports: NonNullable<ModuleMetadata['imports']>;
  showPayloads: boolean;
}

const KNOWN = keySet('a RheoDashboardModule option', ['path', 'instance', 'readOnly', 'guard', 'imports', 'showPayloads']);

// Plain path segments only: a `:param` or `*` would make the dashboard answer
// under paths nobody meant to expose.
const PATH = /^(\/[A-Za-z0-9._~-]+)*\/?$/;

function booleanOr(field: string, value: unknown, fallback: boolean): boolean {
  return value === undefined ? fallback : checkBoolean(field, value);
}

function checkGuard(value: unknown): Type<CanActivate> | CanActivate | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value as Type<CanActivate>;
  if (typeof value === 'object' && value !== null && typeof (value as CanActivate).canActivate === 'function') return value as CanActivate;
  throw RheoError.invalid('guard', 'must be a Nest guard: a class, or an object with canActivate()');
}

/** Checks `input` and applies the defaults; errors say `RheoDashboardModule: <field> …`. */
export function resolveDashboardOptions(input: RheoDashboardOptions | undefined): ResolvedDashboardOptions {
  try {
    const o = checkObject('options', input ?? {}) as RheoDashboardOptions;
    checkKeys('', o, KNOWN);
    const rawPath = o.path ?? '/rheo';
    if (typeof rawPath !== 'string' || !PATH.test(rawPath)) {
      throw RheoError.invalid('path', "must be a URL path of plain segments (letters, digits, '.', '_', '~', '-'), e.g. '/rheo'");
    }
    if (o.imports !== undefined && !Array.isArray(o.imports)) throw RheoError.invalid('imports', 'must be an array of modules');
    return {
      path: rawPath.replace(/\/$/, ''),
      instance: o.instance === undefined ? DEFAULT_RHEO_INSTANCE : checkName('instance', o.instance),
      readOnly: booleanOr('readOnly', o.readOnly, true),
      guard: checkGuard(o.guard),
      imports: o.imports ?? [],
      showPayloads: booleanOr('showPayloads', o.showPayloads, false),
    };
  } catch (err) {
    const e = toRheoError(err);
    throw new RheoError(e.code, `RheoDashboardModule: ${e.message}`, { field: e.field, cause: err });
  }
}
