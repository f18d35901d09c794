// The NestJS integration: module, transport, decorator, context, client, health.
export { RheoModule } from './rheo.module';
export type { RheoModuleOptions, RheoModuleAsyncOptions, RheoModuleRegistration, RheoStreamDeclaration } from './rheo-module-options';
export { RheoConsumer } from './rheo-consumer.decorator';
export type { RheoConsumerMarker } from './rheo-consumer.decorator';
export { consumerKey } from './consumer-options';
export type { RheoConsumerOptions, RheoConsumerSettings } from './consumer-options';
export { RheoContext, RheoBatchContext } from './rheo-context';
export type { RheoDeliveryContext } from './rheo-context';
export type { RheoTransactionManager } from './rheo-context';
export { RheoServer } from './rheo-server';
export type { RheoServerStatus, RheoServerEvents, RheoConsumerRef, RheoConsumerState, RheoServerInternals } from './rheo-server';
export { OnRheoEvent } from './on-rheo-event.decorator';
export type { OnRheoEventOptions } from './on-rheo-event.decorator';
export type {
  RheoEventMap,
  RheoEventName,
  RheoEventListener,
  RheoEventConsumer,
  RheoDeliveryEvent,
  RheoConsumerSettingsSnapshot,
} from './rheo-events';
export { RheoClient } from './rheo-client';
export type { RheoClientStatus } from './rheo-client';
export { RheoHealthIndicator } from './rheo-health.indicator';
export type { RheoHealthOptions, RheoHealthGroup, RheoGroupHealth, RheoHealthResult } from './rheo-health.indicator';
export { RheoOutcomeInterceptor } from './thrown-error-capture';
export { outcomeOfNestError } from './nest-error-outcome';
export { RheoHttpExceptionFilter, RHEO_ERROR_HTTP_STATUS } from './rheo-http-exception.filter';
export type { RheoHttpErrorBody } from './rheo-http-exception.filter';
export { RheoDashboardModule, DASHBOARD_ACTION_HEADER } from './dashboard';
export type { RheoDashboardOptions, LagHistorySnapshot, LagSeries } from './dashboard';
export { InjectRheo, InjectRheoClient, InjectRheoServer, InjectRheoHealthIndicator } from './inject.decorators';
export {
  DEFAULT_RHEO_INSTANCE,
  rheoTransportId,
  getRheoToken,
  getRheoClientToken,
  getRheoServerToken,
  getRheoHealthIndicatorToken,
  getRheoOptionsToken,
} from './constants';
