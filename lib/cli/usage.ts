// A command line the CLI cannot act on (exit code 2), as opposed to a command
// that ran and failed (a RheoError, exit code 1). See docs/adr/026-admin-service-and-cli.md.
import { InvalidArgumentError } from 'commander';

/** The command line is wrong: missing store, options that exclude each other, … */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** commander parsers: a bad option value is a usage error, reported by commander with the option's name. */
export function wholeNumber(value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
}

export function positiveNumber(value: string): number {
  const n = wholeNumber(value);
  if (n < 1) throw new InvalidArgumentError('must be at least 1');
  return n;
}

/** The longest wait a Node timer can hold: a longer one fires after 1 ms instead, so a follow would poll without pause. */
export const MAX_INTERVAL_MS = 2 ** 31 - 1;

/** A wait in ms, from 1 to {@link MAX_INTERVAL_MS} (about 24.8 days). */
export function intervalMs(value: string): number {
  const n = positiveNumber(value);
  if (n > MAX_INTERVAL_MS) throw new InvalidArgumentError(`must be at most ${MAX_INTERVAL_MS} (about 24.8 days)`);
  return n;
}

export function jsonValue(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new InvalidArgumentError('must be JSON (quote it for the shell: \'{"a":1}\')');
  }
}

export function jsonObject(value: string): Record<string, unknown> {
  const parsed = jsonValue(value);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** Exactly one of `options`' keys is set, else a usage error naming them. */
export function exactlyOne<K extends string>(options: object, names: Record<K, string>): K {
  const set = options as Partial<Record<K, unknown>>;
  const given = (Object.keys(names) as K[]).filter((k) => set[k] !== undefined && set[k] !== false);
  if (given.length !== 1) throw new UsageError(`give exactly one of ${Object.values(names).join(', ')}`);
  return given[0];
}
