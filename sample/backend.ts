import { type Backend, memoryBackend } from '../lib';

/** The store the sample runs on: the one place to change it. */
export function createBackend(): Backend {
  return memoryBackend();
}
