// The admin service (framework-free): what the CLI, the dashboard and scripts use.
export { RheoAdmin } from './rheo-admin';
export type { RheoAdminOptions, LocalConsumer } from './rheo-admin';
export { backendFromUrl } from './backend-from-url';
export type { BackendFromUrlOptions } from './backend-from-url';
export type * from './types';
