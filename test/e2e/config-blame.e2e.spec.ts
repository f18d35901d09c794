import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { RheoConsumer, type JsonValue, type RheoModuleOptions } from '../../lib';
import { startupError as startupErrorOf } from './support';

@Controller()
class BillingController {
  @RheoConsumer({ stream: 'orders', group: 'billing', concurrency: 2 })
  charge(@Payload() order: JsonValue) {
    void order;
  }
}

@Controller()
class DecoratedController {
  @RheoConsumer({ stream: 'orders', group: 'billing', maxDemand: 0 })
  charge(@Payload() order: JsonValue) {
    void order;
  }
}

@Controller()
class PollingController {
  @RheoConsumer({ stream: 'orders', group: 'billing', pollMs: 500 })
  charge(@Payload() order: JsonValue) {
    void order;
  }
}

const startupError = (controller: unknown, options: Omit<RheoModuleOptions, 'backend' | 'streams'>) =>
  startupErrorOf('orders', controller, options);

describe('a bad consumer option names where the value came from', () => {
  it('the decorator: the plain option name, as before', async () => {
    const error = await startupError(DecoratedController, {});
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe('DecoratedController.charge: maxDemand must be between 1 and 100000');
    expect(error.field).toBe('maxDemand');
  });

  it('the module\'s consumers map: consumers["stream/group"].option', async () => {
    const error = await startupError(BillingController, { consumers: { 'orders/billing': { maxDemand: 0 } } });
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe('BillingController.charge: consumers["orders/billing"].maxDemand must be between 1 and 100000');
    expect(error.field).toBe('consumers["orders/billing"].maxDemand');
  });

  it("the module's defaults: defaults.option", async () => {
    const error = await startupError(BillingController, { defaults: { maxDemand: 0 } });
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toBe('BillingController.charge: defaults.maxDemand must be between 1 and 100000');
    expect(error.field).toBe('defaults.maxDemand');
  });

  it('blames the source that won: a configured value overrides the decorator, defaults lose to it', async () => {
    const fromConfig = await startupError(DecoratedController, {
      defaults: { concurrency: 0 },
      consumers: { 'orders/billing': { maxDemand: 100_001 } },
    });
    expect(fromConfig.message).toBe('DecoratedController.charge: consumers["orders/billing"].maxDemand must be between 1 and 100000');
    const fromDefaults = await startupError(BillingController, { defaults: { concurrency: 2, maxAttempts: 0 } });
    expect(fromDefaults.message).toBe('BillingController.charge: defaults.maxAttempts must be between 1 and 1000');
    expect(fromDefaults.field).toBe('defaults.maxAttempts');
  });

  it('names a nested field under its source (partitions from configuration)', async () => {
    const error = await startupError(BillingController, { consumers: { 'orders/billing': { partitions: [0, -1] } } });
    expect(error.message).toBe('BillingController.charge: consumers["orders/billing"].partitions[1] must be between 0 and 1023');
    expect(error.field).toBe('consumers["orders/billing"].partitions[1]');
  });

  it('names the configured leaseMs when it is what makes the decorator pollMs invalid', async () => {
    const error = await startupError(PollingController, { consumers: { 'orders/billing': { leaseMs: 400 } } });
    expect(error.message).toBe('PollingController.charge: pollMs must be less than consumers["orders/billing"].leaseMs (400)');
    expect(error.field).toBe('pollMs');
  });
});
