export { MemoryBackend, memoryBackend } from './memory-backend';
export type { MemoryBackendOptions } from './options';
