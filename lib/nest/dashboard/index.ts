// The dashboard: a page and a JSON API served by the host Nest app (docs/adr/027).
export { RheoDashboardModule } from './rheo-dashboard.module';
export type { RheoDashboardOptions } from './dashboard-options';
export { DASHBOARD_ACTION_HEADER } from './action.guard';
export type { LagHistorySnapshot, LagSeries } from './lag-history';
