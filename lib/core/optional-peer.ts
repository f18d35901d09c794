import { RheoError } from './errors';

/**
 * Load an optional peer dependency when the feature that needs it is used, never
 * when nestjs-rheo is imported: a user of one backend installs none of the other
 * drivers, and a user without health checks needs no Terminus. The one loader
 * for every driver and for Terminus, with one error shape:
 * `RheoError('invalid_argument', '<feature> needs the optional dependency "<name>": npm install <spec>')`.
 */
export function loadOptionalPeer<T>(name: string, feature: string, install: string = name): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on demand by design: a static import would make the peer mandatory
    return require(name) as T;
  } catch (err) {
    throw new RheoError('invalid_argument', `${feature} needs the optional dependency "${name}": npm install ${install}`, { cause: err });
  }
}
