// The attribute names of the OpenTelemetry messaging semantic conventions that
// nestjs-rheo's spans carry (docs/observability.md has the span model), written
// out here rather than taken from @opentelemetry/semantic-conventions: one more
// optional peer for a dozen strings would not pay.

export const MESSAGING_SYSTEM = 'messaging.system';
export const MESSAGING_DESTINATION = 'messaging.destination.name';
export const MESSAGING_PARTITION = 'messaging.destination.partition.id';
export const MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const MESSAGING_OPERATION_NAME = 'messaging.operation.name';
export const MESSAGING_MESSAGE_ID = 'messaging.message.id';
export const MESSAGING_BATCH_COUNT = 'messaging.batch.message_count';
export const MESSAGING_CONSUMER_GROUP = 'messaging.consumer.group.name';
export const MESSAGING_CLIENT_ID = 'messaging.client.id';
export const RHEO_ATTEMPT = 'rheo.attempt';
export const RHEO_OUTCOME = 'rheo.outcome';

/** `messaging.system` of every span: nestjs-rheo is the messaging system. */
export const SYSTEM = 'rheo';
