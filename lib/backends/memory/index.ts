export { MemoryBackend, memoryBackend } from './memory-backend';
export type { MemoryBackendOptions } from './memory-backend';
