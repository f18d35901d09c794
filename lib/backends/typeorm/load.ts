import { RheoError } from '../../core/errors';

/**
 * Load an optional peer dependency when a backend is built, never when the
 * package is imported: a user of another backend installs none of these.
 */
export function loadDriver<T>(name: 'typeorm' | 'pg' | 'better-sqlite3', forWhat: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(name) as T;
  } catch (err) {
    throw new RheoError('invalid_argument', `${forWhat} needs the optional dependency "${name}": npm install ${name}`, { cause: err });
  }
}
